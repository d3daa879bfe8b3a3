// Package boxaddr reads the address of a box as network tools take it:
// a name or an IPv4 address, an IPv6 address bare or in brackets, each
// with or without a port (host:port, [v6]:port).
package boxaddr

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Addr is a box's host and port.
type Addr struct {
	Host string // a name or an address, IPv6 without brackets
	Port int
	// PortGiven says the port came with the address rather than from
	// the default.
	PortGiven bool
}

// String is host:port, IPv6 in brackets.
func (a Addr) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// Parse reads s; a port not given is defaultPort. A trailing slash, as
// a browser's address bar leaves it, is ignored.
func Parse(s string, defaultPort int) (Addr, error) {
	in := s
	s = strings.TrimSuffix(strings.TrimSpace(s), "/")
	if s == "" {
		return Addr{}, fmt.Errorf("no address given")
	}
	if strings.Contains(s, "://") {
		return Addr{}, fmt.Errorf("address %q: give the host (and port), not a URL", in)
	}
	// A bare IPv6 address has colons that are not a port's.
	if ip, err := netip.ParseAddr(s); err == nil {
		return Addr{Host: ip.String(), Port: defaultPort}, nil
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		ip, err := netip.ParseAddr(s[1 : len(s)-1])
		if err != nil || !ip.Is6() {
			return Addr{}, fmt.Errorf("address %q: brackets hold an IPv6 address", in)
		}
		return Addr{Host: ip.String(), Port: defaultPort}, nil
	}
	if !strings.Contains(s, ":") {
		if err := checkName(s); err != nil {
			return Addr{}, fmt.Errorf("address %q: %w", in, err)
		}
		return Addr{Host: s, Port: defaultPort}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return Addr{}, fmt.Errorf("address %q: want host, host:port or [IPv6]:port", in)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return Addr{}, fmt.Errorf("address %q: port %q is not a number from 1 to 65535", in, port)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Is6() && !strings.HasPrefix(s, "[") {
			return Addr{}, fmt.Errorf("address %q: put an IPv6 address in brackets to give a port", in)
		}
		return Addr{Host: ip.String(), Port: p, PortGiven: true}, nil
	}
	if strings.HasPrefix(s, "[") {
		return Addr{}, fmt.Errorf("address %q: brackets hold an IPv6 address", in)
	}
	if err := checkName(host); err != nil {
		return Addr{}, fmt.Errorf("address %q: %w", in, err)
	}
	return Addr{Host: host, Port: p, PortGiven: true}, nil
}

// checkName refuses what no host name holds, so that a typo is named
// here rather than as a failed lookup.
func checkName(name string) error {
	if len(name) > 253 {
		return fmt.Errorf("host name longer than 253 characters")
	}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("host name %q has an empty or too long label", name)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("host name %q holds %q", name, r)
			}
		}
	}
	return nil
}
