package dataport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// sysctl is one per-interface setting Quiet makes.
type sysctl struct {
	family, name, value string
}

// quietSysctls keep the stack silent on a port. arp_ignore 8 never answers
// ARP on it, whatever address is asked for (the default 0 answers for any
// address of the box, the management address included); arp_announce 2
// never uses another interface's address as the sender of the box's own
// requests; rp_filter 1 drops what arrives on it from a source not routed
// back through it, which is every source, since a data port has no routes.
// IPv6 off takes link-local addresses, ND, router solicitations and MLD
// reports with it.
var quietSysctls = []sysctl{
	{"ipv6", "disable_ipv6", "1"},
	{"ipv6", "accept_ra", "0"},
	{"ipv6", "autoconf", "0"},
	{"ipv4", "arp_ignore", "8"},
	{"ipv4", "arp_announce", "2"},
	{"ipv4", "rp_filter", "1"},
	{"ipv4", "accept_local", "0"},
	{"ipv4", "send_redirects", "0"},
	{"ipv4", "accept_redirects", "0"},
	{"ipv4", "accept_source_route", "0"},
}

// Quiet takes the kernel's IP stack off the interface: it removes every
// address and writes quietSysctls under root/proc/sys/net. It does not
// change whether the port is up. Every step is tried; the error names each
// that failed.
func Quiet(root, ifname string) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("dataport: %s: %w", ifname, err)
	}
	var errs []error
	for _, s := range quietSysctls {
		p := filepath.Join(root, "proc/sys/net", s.family, "conf", ifname, s.name)
		if err := os.WriteFile(p, []byte(s.value+"\n"), 0o644); err != nil {
			if errors.Is(err, os.ErrNotExist) && s.family == "ipv6" {
				continue // a kernel without IPv6 has nothing to turn off
			}
			errs = append(errs, fmt.Errorf("net.%s.conf.%s.%s=%s: %w", s.family, ifname, s.name, s.value, err))
		}
	}
	addrs, err := netlink.AddrList(l, unix.AF_UNSPEC)
	if err != nil {
		errs = append(errs, fmt.Errorf("listing addresses: %w", err))
	}
	for _, a := range addrs {
		if err := netlink.AddrDel(l, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			errs = append(errs, fmt.Errorf("removing address %s: %w", a.IPNet, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dataport: quieting %s: %w", ifname, err)
	}
	return nil
}

// Down takes the port's link down, so that it receives nothing at all.
func Down(ifname string) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("dataport: %s: %w", ifname, err)
	}
	if err := netlink.LinkSetDown(l); err != nil {
		return fmt.Errorf("dataport: %s down: %w", ifname, err)
	}
	return nil
}
