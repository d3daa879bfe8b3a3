package main

import (
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/web/api"
)

// boxFlags are how a host command reaches one box's statusd.
type boxFlags struct {
	host, fingerprint, known, passwordFile string
	statusPort                             int
}

func (b *boxFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.host, "host", "", "appliance address (name or IP), required")
	fs.IntVar(&b.statusPort, "status-port", 443, "statusd's HTTPS port on the appliance")
	fs.StringVar(&b.fingerprint, "fingerprint", "", "the box's TLS key as its console or dashboard shows it (sha256:…); default: the one pinned, or pin it on first contact")
	fs.StringVar(&b.known, "known", "", "file of pinned boxes (default: ~/.config/ncpos/known_boxes)")
	fs.StringVar(&b.passwordFile, "password-file", "", "file whose first line is the box's control password (default: ~/.config/ncpos/passwords/<host>)")
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

// client is statusd's API client for the box.
func (b *boxFlags) client() (*api.Client, error) {
	pw, _, pin, err := b.connect()
	if err != nil {
		return nil, err
	}
	return &api.Client{URL: "https://" + b.addr() + "/", Password: pw, TLS: pin.TLSConfig()}, nil
}
