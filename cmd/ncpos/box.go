package main

import (
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"

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
	fs.StringVar(&b.host, "host", "", "appliance address (name or IP), required")
	fs.IntVar(&b.statusPort, "status-port", 443, "statusd's HTTPS port on the appliance")
	fs.StringVar(&b.fingerprint, "fingerprint", "", "the box's TLS key as its console or dashboard shows it (sha256:…); default: the one pinned, or pin it on first contact")
	fs.StringVar(&b.known, "known", "", "file of pinned boxes (default: ~/.config/ncpos/known_boxes)")
	fs.StringVar(&b.passwordFile, "password-file", "", "file whose first line is the account's password (default for ncpos: the box's control password in ~/.config/ncpos/passwords/<host>)")
	fs.StringVar(&b.user, "user", "ncpos", "the account to sign in as (with -password-file)")
	fs.StringVar(&b.tokenFile, "token-file", "", "file whose first line is an API token, to sign in with instead of an account's password")
}

// name is the box's name as given, without a trailing slash.
func (b *boxFlags) name() string { return strings.TrimSuffix(b.host, "/") }

// addr is statusd's host:port.
func (b *boxFlags) addr() string { return net.JoinHostPort(b.name(), strconv.Itoa(b.statusPort)) }

// connect returns the box's control password, where it was read, and the
// pin of its key.
func (b *boxFlags) connect() (pw, pwPath string, pin *boxtls.Pin, err error) {
	if b.host == "" {
		return "", "", nil, fmt.Errorf("-host is required")
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
	c := &api.Client{URL: "https://" + b.addr() + "/"}
	var pin *boxtls.Pin
	var err error
	switch {
	case b.host == "":
		return nil, fmt.Errorf("-host is required")
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
