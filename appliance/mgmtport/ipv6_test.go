package mgmtport

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/radvdtest"
	"github.com/ncpos/ncpos/internal/testenv"
)

// v6State is the port's global IPv6 addresses and its IPv6 default
// routes (gateway and protocol).
func v6State(t *testing.T) (addrs, routes []string) {
	t.Helper()
	link, err := netlink.LinkByName(port)
	if err != nil {
		t.Fatal(err)
	}
	as, _ := netlink.AddrList(link, netlink.FAMILY_V6)
	for _, a := range as {
		if !a.IP.IsLinkLocalUnicast() {
			addrs = append(addrs, a.IPNet.String())
		}
	}
	rs, _ := netlink.RouteList(link, netlink.FAMILY_V6)
	for _, r := range rs {
		if isDefault6(r) && r.Gw != nil {
			proto := "static"
			if r.Protocol == unix.RTPROT_RA {
				proto = "ra"
			}
			routes = append(routes, r.Gw.String()+" "+proto)
		}
	}
	return addrs, routes
}

// waitV6 waits until the port's IPv6 state passes ok.
func waitV6(t *testing.T, what string, ok func(addrs, routes []string) bool) {
	t.Helper()
	var addrs, routes []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if addrs, routes = v6State(t); ok(addrs, routes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: IPv6 addresses %q, default routes %q after 20 s", what, addrs, routes)
		}
	}
}

func hasPrefix(addrs []string, p string) bool {
	return slices.ContainsFunc(addrs, func(a string) bool { return strings.HasPrefix(a, p) })
}

// TestPortIPv6 runs on a veth end whose peer runs radvd: SLAAC takes the
// advertised prefix and the router's default route; a static address
// replaces both (the SLAAC address lingers, then goes) with its own
// gateway; SLAAC again gives the static address up; off leaves the port
// no IPv6 at all.
func TestPortIPv6(t *testing.T) {
	if testenv.InNetNS(t) {
		portIPv6(t)
	}
}

func portIPv6(t *testing.T) {
	p, _ := testPort(t, time.Second)
	radvdtest.Start(t, "", "ncpt-peer", "2001:db8:1::/64")
	must := func(m config.Management) {
		t.Helper()
		if err := p.Set(m); err != nil {
			t.Fatal(err)
		}
	}
	must(config.Management{DHCP: true, IPv6: config.IPv6Slaac})
	waitV6(t, "SLAAC", func(a, r []string) bool {
		return hasPrefix(a, "2001:db8:1:") && len(r) == 1 && strings.HasSuffix(r[0], " ra")
	})
	st, _ := p.State()
	if st.IPv6 != config.IPv6Slaac || !hasPrefix(st.Addresses, "2001:db8:1:") || !strings.HasPrefix(st.Gateway6, "fe80::") {
		t.Errorf("state with SLAAC: %+v", st)
	}

	static := config.Management{DHCP: true, IPv6: config.IPv6Static, Address6: "2001:db8:2::10/64", Gateway6: "fe80::1"}
	must(static)
	addrs, routes := v6State(t)
	if !slices.Contains(addrs, "2001:db8:2::10/64") || !slices.Equal(routes, []string{"fe80::1 static"}) {
		t.Errorf("right after the static change: addresses %q, default routes %q; want the static address beside the lingering SLAAC one, and its gateway alone", addrs, routes)
	}
	waitV6(t, "static", func(a, r []string) bool {
		return slices.Equal(a, []string{"2001:db8:2::10/64"}) && slices.Equal(r, []string{"fe80::1 static"})
	})
	// The router's next advertisements change nothing.
	time.Sleep(5 * time.Second)
	if a, r := v6State(t); !slices.Equal(a, []string{"2001:db8:2::10/64"}) || !slices.Equal(r, []string{"fe80::1 static"}) {
		t.Errorf("static, after the router advertised again: addresses %q, routes %q", a, r)
	}

	must(config.Management{DHCP: true, IPv6: config.IPv6Slaac})
	waitV6(t, "SLAAC again", func(a, r []string) bool {
		return !hasPrefix(a, "2001:db8:2:") && hasPrefix(a, "2001:db8:1:") && len(r) == 1 && strings.HasSuffix(r[0], " ra")
	})

	must(config.Management{DHCP: true, IPv6: config.IPv6Off})
	link, _ := netlink.LinkByName(port)
	if as, _ := netlink.AddrList(link, netlink.FAMILY_V6); len(as) != 0 {
		t.Errorf("IPv6 off: the port still has %v", as)
	}
	// And a revert brings the static setup back whole.
	must(static)
	waitV6(t, "static after off", func(a, r []string) bool {
		return slices.Equal(a, []string{"2001:db8:2::10/64"}) && slices.Equal(r, []string{"fe80::1 static"})
	})
}
