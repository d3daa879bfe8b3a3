package pcapfilter

import (
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
)

// number reads t as a number the way libpcap's scanner does: decimal, hex
// after 0x, octal after a leading 0. It is false for a word not written
// as a number.
func number(t token) (uint32, bool) {
	s, base := t.text, 10
	switch {
	case len(s) > 2 && strings.EqualFold(s[:2], "0x"):
		s, base = s[2:], 16
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	digits := "0123456789"
	if base == 16 {
		digits = "0123456789abcdefABCDEF"
	}
	if t.kind != tWord || t.escaped || s == "" || strings.Trim(s, digits) != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 32)
	if err != nil && err.(*strconv.NumError).Err == strconv.ErrRange {
		fail(t.pos, "number %s overflows 32 bits", t.text)
	} else if err != nil {
		fail(t.pos, "number %s contains non-octal digits", t.text)
	}
	return uint32(n), true
}

// ipv4 reads a dotted IPv4 address or the start of one ("10.1"), as
// libpcap does: the value is right-aligned and bits says how many of its
// bits were written. It is false for a word that is not dotted decimal.
func ipv4(t token) (v uint32, bits int, ok bool) {
	parts := strings.Split(t.text, ".")
	if t.escaped || len(parts) < 2 {
		return 0, 0, false
	}
	for _, s := range parts {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return 0, 0, false
		}
	}
	for _, s := range parts {
		n, err := strconv.ParseUint(s, 10, 8)
		if err != nil || len(parts) > 4 {
			fail(t.pos, "invalid IPv4 address %q", t.text)
		}
		v = v<<8 | uint32(n)
	}
	return v, 8 * len(parts), true
}

// ipv6 reads an IPv6 address; it is false for a word without ':'.
func ipv6(t token) (netip.Addr, bool) {
	if t.escaped || !strings.Contains(t.text, ":") {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(t.text)
	if err != nil || !a.Is6() || a.Zone() != "" {
		fail(t.pos, "invalid IPv6 address %q", t.text)
	}
	return a, true
}

// mac reads a MAC address written as six groups of one or two hex digits
// separated by ':', '-' or '.', or three groups of four separated by '.'.
func mac(t token) (m [6]byte, ok bool) {
	for _, sep := range []string{":", "-", "."} {
		parts := strings.Split(t.text, sep)
		width := 2
		if len(parts) == 3 && sep == "." {
			width = 4
		} else if len(parts) != 6 {
			continue
		}
		digits := ""
		for _, s := range parts {
			if s == "" || len(s) > width || width == 4 && len(s) != 4 {
				digits = "-"
			}
			digits += strings.Repeat("0", max(0, width-len(s))) + s
		}
		if b, err := hex.DecodeString(digits); err == nil && !t.escaped {
			return [6]byte(b), true
		}
	}
	return m, false
}
