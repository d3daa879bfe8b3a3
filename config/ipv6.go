package config

import (
	"net/netip"
	"strconv"
)

func (c *Config) validateIPv6(add addFunc) {
	m := c.Management
	switch m.IPv6 {
	case IPv6Slaac, IPv6Off:
		if m.Address6 != "" {
			add("management.address6", "%q is set but ipv6 = %q, want ipv6 = \"static\" for a static IPv6 address", m.Address6, m.IPv6)
		}
		if m.Gateway6 != "" {
			add("management.gateway6", "%q is set but ipv6 = %q, want ipv6 = \"static\" for a static IPv6 gateway", m.Gateway6, m.IPv6)
		}
		return
	case IPv6Static:
	default:
		add("management.ipv6", "%q, want \"slaac\", \"static\" or \"off\"", m.IPv6)
		return
	}
	var prefix netip.Prefix
	if m.Address6 == "" {
		add("management.address6", "missing, want a static IPv6 address such as \"2001:db8::10/64\" when ipv6 = \"static\"")
	} else if p, err := netip.ParsePrefix(m.Address6); err != nil || !p.Addr().Is6() || p.Addr().Is4In6() {
		add("management.address6", "%q is not an IPv6 address in CIDR form, want e.g. \"2001:db8::10/64\"", m.Address6)
	} else if a := p.Addr(); a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalUnicast() || a.IsLoopback() {
		add("management.address6", "%q is not a usable global address, want e.g. \"2001:db8::10/64\" (the port keeps its link-local address by itself)", m.Address6)
	} else {
		prefix = p
	}
	if m.Gateway6 == "" {
		return
	}
	gw, err := netip.ParseAddr(m.Gateway6)
	switch {
	case err != nil || !gw.Is6() || gw.Is4In6() || gw.Zone() != "":
		add("management.gateway6", "%q is not an IPv6 address, want e.g. \"fe80::1\" or \"2001:db8::1\"", m.Gateway6)
	case gw.IsLinkLocalUnicast():
		// A router's link-local address: what router advertisements name.
	case prefix.IsValid() && !prefix.Masked().Contains(gw):
		add("management.gateway6", "%s is outside %s, want an address on the management subnet or the router's link-local address", gw, m.Address6)
	case prefix.IsValid() && gw == prefix.Addr():
		add("management.gateway6", "%s is the appliance's own address, want the router's address", gw)
	}
}

// maxDNS is the resolver's limit (resolv.conf's MAXNS).
const maxDNS = 3

func (c *Config) validateDNS(add addFunc) {
	if len(c.Management.DNS) > maxDNS {
		add("management.dns", "%d servers, want at most %d (the resolver asks no more)", len(c.Management.DNS), maxDNS)
	}
	for i, s := range c.Management.DNS {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
			add("management.dns["+strconv.Itoa(i)+"]", "%q is not a DNS server's address, want e.g. \"192.0.2.53\" or \"2001:db8::53\"", s)
		}
	}
}
