package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/ncpos/ncpos/boxaddr"
	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/web/api"
)

// boxFlags are how a host command reaches one box's statusd.
type boxFlags struct {
	host, fingerprint, known, passwordFile string
	user, tokenFile                        string
	statusPort                             int
}

func (b *boxFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.host, "host", "", "appliance address: name, IPv4 or IPv6 address, with or without a port (box:8443, [2001:db8::7]:8443), required")
	fs.IntVar(&b.statusPort, "status-port", 0, "statusd's HTTPS port on the appliance (default: the port in -host, else 443)")
	fs.StringVar(&b.fingerprint, "fingerprint", "", "the box's TLS key as its console or dashboard shows it (sha256:…); default: the one pinned, or pin it on first contact")
	fs.StringVar(&b.known, "known", "", "file of pinned boxes (default: ~/.config/ncpos/known_boxes)")
	fs.StringVar(&b.passwordFile, "password-file", "", "file whose first line is the account's password (default for ncpos: the box's control password in ~/.config/ncpos/passwords/<host>)")
	fs.StringVar(&b.user, "user", "ncpos", "the account to sign in as (with -password-file)")
	fs.StringVar(&b.tokenFile, "token-file", "", "file whose first line is an API token, to sign in with instead of an account's password")
}

// parse reads -host and -status-port: a port in -host is the port
// unless -status-port names another.
func (b *boxFlags) parse() (boxaddr.Addr, error) {
	if b.host == "" {
		return boxaddr.Addr{}, fmt.Errorf("-host is required")
	}
	a, err := boxaddr.Parse(b.host, 443)
	if err != nil {
		return a, fmt.Errorf("-host: %w", err)
	}
	switch {
	case b.statusPort < 0 || b.statusPort > 65535:
		return a, fmt.Errorf("-status-port %d: not a port", b.statusPort)
	case b.statusPort != 0 && a.PortGiven && a.Port != b.statusPort:
		return a, fmt.Errorf("-host %s names port %d and -status-port %d: give one", b.host, a.Port, b.statusPort)
	case b.statusPort != 0:
		a.Port = b.statusPort
	}
	return a, nil
}

// name is the box's host without its port: what its pinned key and
// recorded password are kept under.
func (b *boxFlags) name() string {
	a, err := b.parse()
	if err != nil {
		return strings.TrimSuffix(b.host, "/")
	}
	return a.Host
}

// shown is -host as the operator gave it, for messages that name a
// command to run next.
func (b *boxFlags) shown() string { return strings.TrimSuffix(b.host, "/") }

// addr is statusd's host:port.
func (b *boxFlags) addr() string {
	a, _ := b.parse()
	return a.String()
}

// connect returns the box's control password, where it was read, and the
// pin of its key.
func (b *boxFlags) connect() (pw, pwPath string, pin *boxtls.Pin, err error) {
	if _, err := b.parse(); err != nil {
		return "", "", nil, err
	}
	if pw, pwPath, err = boxPassword(b.name(), b.passwordFile); err != nil {
		return "", "", nil, err
	}
	pin, err = newPin(b.name(), b.fingerprint, b.known)
	return pw, pwPath, pin, err
}

// client is statusd's API client for the box, signed in with the token
// or the account's password.
func (b *boxFlags) client() (*api.Client, error) {
	a, err := b.parse()
	if err != nil {
		return nil, err
	}
	c := &api.Client{URL: "https://" + a.String() + "/"}
	var pin *boxtls.Pin
	switch {
	case b.tokenFile != "":
		if c.Token, err = image.ReadPassword(b.tokenFile); err != nil {
			return nil, fmt.Errorf("-token-file: %w", err)
		}
		pin, err = newPin(b.name(), b.fingerprint, b.known)
	case b.user != api.BuiltinAccount && b.passwordFile == "":
		return nil, fmt.Errorf("-user %s: give its password with -password-file, or sign in with -token-file", b.user)
	default:
		c.User = b.user
		c.Password, _, pin, err = b.connect()
	}
	if err != nil {
		return nil, err
	}
	c.TLS = pin.TLSConfig()
	return c, nil
}
