package lldp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ncpos/ncpos/internal/lldpdtest"
	"github.com/ncpos/ncpos/internal/testenv"
)

// TestAnnouncementDecodes: the frame the box sends reads back as what it
// says, by this package's own reader.
func TestAnnouncementDecodes(t *testing.T) {
	a := Announcement{MAC: net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}, Ifname: "eth0", IfIndex: 2,
		PortDescription: "MGMT, management", SystemName: "fw1", SystemDescription: "ncpos build 7",
		Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.7"), netip.MustParseAddr("2001:db8::7")}, TTL: 120}
	f := a.Frame()
	n, err := Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	want := Neighbor{ChassisID: "52:54:00:12:34:56", ChassisIDSubtype: 4, PortID: "eth0", PortIDSubtype: 5, TTL: 120,
		PortDescription: "MGMT, management", SystemName: "fw1", SystemDescription: "ncpos build 7", ManagementAddress: "192.0.2.7"}
	if n != want {
		t.Errorf("decoded %+v, want %+v", n, want)
	}
	if !strings.Contains(string(f), string(netip.MustParseAddr("2001:db8::7").AsSlice())) {
		t.Errorf("the frame does not carry the IPv6 management address")
	}
	a.TTL = 0
	if n, err := Decode(a.Frame()); err != nil || n.TTL != 0 || n.SystemName != "" {
		t.Errorf("the shutdown LLDPDU reads %+v, %v; want TTL 0 and nothing more", n, err)
	}
}

// TestLldpdHearsAnnouncer: Debian's lldpd on the other end of the
// management port's cable shows the box's name, port and both
// management addresses, and forgets it when the box says goodbye.
func TestLldpdHearsAnnouncer(t *testing.T) {
	if !testenv.InNetNS(t) {
		return
	}
	ns := fmt.Sprintf("ncpt-lldpa-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "ncpt-mgmt0"}, PeerName: "ncpt-sw0"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	peer, err := netlink.LinkByName("ncpt-sw0")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetNsFd(peer, int(h)); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "netns", "exec", ns, "ip", "link", "set", "ncpt-sw0", "up").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	mgmt, err := netlink.LinkByName("ncpt-mgmt0")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"192.0.2.7/24", "2001:db8::7/64"} {
		addr, _ := netlink.ParseAddr(a)
		addr.Flags = 0x80 // IFA_F_NODAD: usable at once
		if err := netlink.AddrAdd(mgmt, addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := netlink.LinkSetUp(mgmt); err != nil {
		t.Fatal(err)
	}
	l := lldpdtest.Start(t, ns, "ncpt-sw0", "switch1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	an := &Announcer{Ifname: "ncpt-mgmt0", PortDescription: "MGMT, management", Interval: time.Second, Check: 100 * time.Millisecond,
		Describe: func() (string, string) { return "fw1", "ncpos test build" }, Logf: t.Logf}
	go func() { an.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	l.Hears(t, "fw1", 10*time.Second)
	out, err := exec.Command("ip", "netns", "exec", ns, "lldpcli", "-u", l.Socket(), "show", "neighbors", "details").CombinedOutput()
	if err != nil {
		t.Fatalf("lldpcli: %v: %s", err, out)
	}
	for _, want := range []string{"SysName:      fw1", "SysDescr:     ncpos test build", "MgmtIP:       192.0.2.7", "MgmtIP:       2001:db8::7",
		"PortID:       ifname ncpt-mgmt0", "PortDescr:    MGMT, management", "Capability:   Station, on"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("lldpcli does not show %q:\n%s", want, out)
		}
	}
	// Goodbye: the shutdown LLDPDU takes the box off lldpd's table at
	// once, long before its TTL would.
	cancel()
	<-done
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ = exec.Command("ip", "netns", "exec", ns, "lldpcli", "-u", l.Socket(), "show", "neighbors").CombinedOutput()
		if !strings.Contains(string(out), "fw1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lldpd still shows the box 5 s after its goodbye:\n%s", out)
		}
	}
}
