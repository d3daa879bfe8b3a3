package mgmtport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/config"
)

// setIPv6 gives the port the IPv6 setup a asks for. With SLAAC the kernel
// takes the router's advertisements (an address per prefix and the
// default route); a static address is the only global one, its gateway
// the only default route. What is given up lingers as the IPv4 addresses
// do; the link-local address stays whatever the setup, but with IPv6
// off, where the kernel drops every IPv6 address of the port.
func (p *Port) setIPv6(link netlink.Link, a addressing) error {
	if a.ipv6 == config.IPv6Off {
		return p.sysctl6("disable_ipv6", "1")
	}
	if _, err := os.Stat(p.conf6()); errors.Is(err, os.ErrNotExist) {
		// A kernel without IPv6: SLAAC, the default, has nothing to do.
		if a.ipv6 == config.IPv6Static {
			return fmt.Errorf("management.address6: the kernel of this box has no IPv6 on %s", p.Ifname)
		}
		return nil
	}
	if err := p.sysctl6("disable_ipv6", "0"); err != nil {
		return err
	}
	var keep *netlink.Addr
	ra := "2" // accept advertisements even where the box forwards IP
	autoconf := "1"
	if a.ipv6 == config.IPv6Static {
		ra, autoconf = "0", "0"
		addr, err := netlink.ParseAddr(a.address6)
		if err != nil {
			return fmt.Errorf("management.address6 %q: %w", a.address6, err)
		}
		if err := netlink.AddrReplace(link, addr); err != nil {
			return fmt.Errorf("management port %s: address %s: %w", p.Ifname, addr.IPNet, err)
		}
		keep = addr
	}
	// Advertisements taken no more first: a router's next one would
	// refresh the lifetimes of a SLAAC address given up.
	var errs []error
	for _, s := range []struct{ name, value string }{{"accept_ra", ra}, {"autoconf", autoconf}} {
		if err := p.sysctl6(s.name, s.value); err != nil {
			errs = append(errs, err)
		}
	}
	// The link-local address stays; with SLAAC so do the addresses it
	// made (not permanent), which the router's lifetimes keep.
	gone, err := p.giveUp(link, netlink.FAMILY_V6, func(ad netlink.Addr) bool {
		return ad.IP.IsLinkLocalUnicast() ||
			keep != nil && ad.IPNet.String() == keep.IPNet.String() ||
			keep == nil && ad.Flags&unix.IFA_F_PERMANENT == 0
	})
	if err != nil {
		return err
	}
	errs = append(errs, gone...)
	if err := p.route6(link, a); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// route6 makes the static gateway the only IPv6 default route through
// link; with SLAAC only the router's advertised routes stay.
func (p *Port) route6(link netlink.Link, a addressing) error {
	var want net.IP
	if a.ipv6 == config.IPv6Static && a.gateway6 != "" {
		if want = net.ParseIP(a.gateway6); want == nil || want.To4() != nil {
			return fmt.Errorf("management.gateway6 %q: not an IPv6 address", a.gateway6)
		}
		err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: defaultDst6(), Gw: want, Priority: routePriority})
		if err != nil {
			return fmt.Errorf("management port %s: IPv6 default route through %s: %w", p.Ifname, a.gateway6, err)
		}
	}
	routes, err := netlink.RouteList(link, netlink.FAMILY_V6)
	if err != nil {
		return fmt.Errorf("management port %s: reading its IPv6 routes: %w", p.Ifname, err)
	}
	var errs []error
	for _, r := range routes {
		switch {
		case !isDefault6(r):
			continue
		case want != nil && r.Gw.Equal(want) && r.Priority == routePriority:
			continue
		case a.ipv6 == config.IPv6Slaac && r.Protocol == unix.RTPROT_RA:
			continue
		}
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("management port %s: removing the IPv6 default route through %s: %w", p.Ifname, r.Gw, err))
		}
	}
	return errors.Join(errs...)
}

// isDefault6 says whether r is an IPv6 default route.
func isDefault6(r netlink.Route) bool {
	if r.Dst == nil {
		return true
	}
	ones, bits := r.Dst.Mask.Size()
	return ones == 0 && bits == 128
}

func defaultDst6() *net.IPNet { return &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)} }

// sysctl6 sets one of the port's IPv6 settings. A kernel built without
// IPv6 has none: only turning IPv6 off then goes without an error.
func (p *Port) sysctl6(name, value string) error {
	err := os.WriteFile(filepath.Join(p.conf6(), name), []byte(value), 0o644)
	if err != nil && !(errors.Is(err, os.ErrNotExist) && name == "disable_ipv6" && value == "1") {
		return fmt.Errorf("management port %s: IPv6 %s: %w", p.Ifname, name, err)
	}
	return nil
}

// conf6 is the folder of the port's IPv6 settings.
func (p *Port) conf6() string {
	root := p.ProcSys
	if root == "" {
		root = "/proc/sys"
	}
	return filepath.Join(root, "net/ipv6/conf", p.Ifname)
}

func (p *Port) linger() time.Duration {
	if p.Linger > 0 {
		return p.Linger
	}
	return defaultLinger
}
