// Package mgmtport gives the management port its address: a static one
// from the configuration, or one leased by gokrazy's DHCP client, which it
// runs while the configuration asks for DHCP and stops when it does not.
// Init sets the address at boot, and again in place when a change of the
// configuration asks for another. An address given up stays valid for a
// few seconds more, deprecated, so that the answer to the change still
// reaches the operator who made it over that address; then the kernel
// removes it.
package mgmtport

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/config"
)

// defaultLinger is how long an address given up stays valid.
const defaultLinger = 5 * time.Second

// routePriority is the metric of the default route of a static address:
// the one gokrazy's DHCP client gives an ethN port's route, so that each
// replaces the other.
const routePriority = 1

// Port is the management port.
type Port struct {
	Ifname string
	// DHCP is the DHCP client's command line, run while the
	// configuration asks for DHCP (and again should it exit).
	DHCP []string
	// Linger is how long an address given up stays valid (DefaultLinger
	// when 0).
	Linger time.Duration
	// Out takes the DHCP client's output (nil: discarded).
	Out io.Writer
	// ProcSys is where the port's sysctls are (/proc/sys when "").
	ProcSys string

	mu     sync.Mutex
	client *client
	// set is what the port holds: what was last set whole, nil while
	// that is not known (before the first Set, and after one that failed
	// part way), so that the next Set, a revert among them, sets every
	// part again.
	set *addressing
}

// addressing is what of the management settings the port takes: the
// DNS servers are the resolver's.
type addressing struct {
	dhcp                                       bool
	address, gateway, ipv6, address6, gateway6 string
}

func addressingOf(m config.Management) addressing {
	return addressing{m.DHCP, m.Address, m.Gateway, cmp.Or(m.IPv6, config.IPv6Slaac), m.Address6, m.Gateway6}
}

// State is what the port was last set to.
type State struct {
	Interface string   `json:"interface"`
	DHCP      bool     `json:"dhcp"`
	Addresses []string `json:"addresses"` // IPv4, then IPv6 but link-local, in CIDR form, as the kernel holds them
	Gateway   string   `json:"gateway,omitempty"`
	IPv6      string   `json:"ipv6"`               // config.IPv6Slaac, IPv6Static or IPv6Off, as last set
	Gateway6  string   `json:"gateway6,omitempty"` // the IPv6 default route's, static or from the router
}

// Set gives the port the address m asks for; it does nothing when m is
// what the port holds, set whole by the last Set. A Set that fails part
// way (the DHCP client stopped, an address given up, no route) leaves
// the port's state unknown: the next Set does every part again.
func (p *Port) Set(m config.Management) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := addressingOf(m)
	if p.set != nil && *p.set == want {
		return nil
	}
	p.set = nil
	link, err := netlink.LinkByName(p.Ifname)
	if err != nil {
		return fmt.Errorf("management port %s: %w", p.Ifname, err)
	}
	// A new address on the subnet of the one given up is its secondary:
	// the kernel would drop it with the primary unless promoted.
	p.sysctl("promote_secondaries", "1")
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("management port %s: bringing it up: %w", p.Ifname, err)
	}
	if m.DHCP {
		// The client runs even when an address of before would not go:
		// without it the port may have none at all.
		err := p.static(link, nil, "")
		if p.client == nil {
			if len(p.DHCP) == 0 {
				return fmt.Errorf("management port %s: no DHCP client to run", p.Ifname)
			}
			p.client = startClient(p.DHCP, p.Out)
		}
		if err != nil {
			return err
		}
	} else {
		// Stopped first: a lease renewed meanwhile would come back.
		if p.client != nil {
			p.client.stop()
			p.client = nil
		}
		addr, err := netlink.ParseAddr(m.Address)
		if err != nil {
			return fmt.Errorf("management.address %q: %w", m.Address, err)
		}
		if err := p.static(link, addr, m.Gateway); err != nil {
			return err
		}
	}
	if err := p.setIPv6(link, want); err != nil {
		return err
	}
	p.set = &want
	return nil
}

// static gives link the address addr (nil: none of its own, DHCP's) and
// a default route through gateway ("": none). Every other IPv4 address
// lingers, and every other default route on link goes.
func (p *Port) static(link netlink.Link, addr *netlink.Addr, gateway string) error {
	if addr != nil {
		if err := netlink.AddrReplace(link, addr); err != nil {
			return fmt.Errorf("management port %s: address %s: %w", p.Ifname, addr.IPNet, err)
		}
	}
	errs, err := p.giveUp(link, netlink.FAMILY_V4, func(a netlink.Addr) bool {
		return addr != nil && a.IPNet.String() == addr.IPNet.String()
	})
	if err != nil {
		return err
	}
	if err := p.route(link, gateway); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// route makes gateway the only default route through link ("": none).
func (p *Port) route(link netlink.Link, gateway string) error {
	var want net.IP
	if gateway != "" {
		if want = net.ParseIP(gateway).To4(); want == nil {
			return fmt.Errorf("management.gateway %q: not an IPv4 address", gateway)
		}
		err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: defaultDst(), Gw: want, Priority: routePriority})
		if err != nil {
			return fmt.Errorf("management port %s: default route through %s: %w", p.Ifname, gateway, err)
		}
	}
	routes, err := netlink.RouteList(link, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("management port %s: reading its routes: %w", p.Ifname, err)
	}
	var errs []error
	for _, r := range routes {
		if !isDefault(r) || want != nil && r.Gw.Equal(want) && r.Priority == routePriority {
			continue
		}
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("management port %s: removing the default route through %s: %w", p.Ifname, r.Gw, err))
		}
	}
	return errors.Join(errs...)
}

// giveUp lets every address of family on link but those keep keeps
// linger, deprecated, and go; it returns what it could not give up, and
// an error when it could not read the addresses.
func (p *Port) giveUp(link netlink.Link, family int, keep func(netlink.Addr) bool) ([]error, error) {
	have, err := netlink.AddrList(link, family)
	if err != nil {
		return nil, fmt.Errorf("management port %s: reading its addresses: %w", p.Ifname, err)
	}
	linger := int(p.linger().Seconds())
	var errs []error
	for _, a := range have {
		if keep(a) || a.ValidLft > 0 && a.ValidLft <= linger {
			continue // kept, or already on its way out
		}
		old := &netlink.Addr{IPNet: a.IPNet, ValidLft: linger, PreferedLft: 0}
		if err := netlink.AddrReplace(link, old); err != nil {
			errs = append(errs, fmt.Errorf("management port %s: giving up %s: %w", p.Ifname, a.IPNet, err))
		}
	}
	return errs, nil
}

// isDefault says whether r is a default route.
func isDefault(r netlink.Route) bool {
	return r.Dst == nil || r.Dst.IP.IsUnspecified() && slices.Equal(r.Dst.Mask, net.IPv4Mask(0, 0, 0, 0))
}

func defaultDst() *net.IPNet {
	return &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.IPv4Mask(0, 0, 0, 0)}
}

// sysctl sets one of the port's IPv4 settings, best effort: a box whose
// kernel lacks it keeps its behaviour.
func (p *Port) sysctl(name, value string) {
	root := p.ProcSys
	if root == "" {
		root = "/proc/sys"
	}
	os.WriteFile(filepath.Join(root, "net/ipv4/conf", p.Ifname, name), []byte(value), 0o644)
}

// State reads the port's addresses and its default route as they are.
func (p *Port) State() (State, error) {
	p.mu.Lock()
	st := State{Interface: p.Ifname, Addresses: []string{}, DHCP: p.client != nil}
	p.mu.Unlock()
	link, err := netlink.LinkByName(p.Ifname)
	if err != nil {
		return st, fmt.Errorf("management port %s: %w", p.Ifname, err)
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return st, fmt.Errorf("management port %s: reading its addresses: %w", p.Ifname, err)
	}
	for _, a := range addrs {
		st.Addresses = append(st.Addresses, a.IPNet.String())
	}
	routes, _ := netlink.RouteList(link, netlink.FAMILY_V4)
	for _, r := range routes {
		if isDefault(r) && r.Gw != nil {
			st.Gateway = r.Gw.String()
		}
	}
	p.mu.Lock()
	st.IPv6 = config.IPv6Slaac
	if p.set != nil {
		st.IPv6 = p.set.ipv6
	}
	p.mu.Unlock()
	addrs6, _ := netlink.AddrList(link, netlink.FAMILY_V6)
	for _, a := range addrs6 {
		if !a.IP.IsLinkLocalUnicast() {
			st.Addresses = append(st.Addresses, a.IPNet.String())
		}
	}
	routes6, _ := netlink.RouteList(link, netlink.FAMILY_V6)
	for _, r := range routes6 {
		if isDefault6(r) && r.Gw != nil {
			st.Gateway6 = r.Gw.String()
		}
	}
	return st, nil
}

// Close stops the DHCP client, if it runs.
func (p *Port) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		p.client.stop()
		p.client = nil
	}
	p.set = nil
}
