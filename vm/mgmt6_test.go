package vm

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/lldpdtest"
	"github.com/ncpos/ncpos/internal/radvdtest"
	"github.com/ncpos/ncpos/lab"
	"github.com/ncpos/ncpos/web/api"
)

// The management network of TestManagementNetwork: the box's static IPv4
// address and the router's addresses in the namespace at the far end.
const (
	mgmtBox4    = "192.0.2.10"
	mgmtRouter4 = "192.0.2.1"
	mgmtPrefix6 = "2001:db8:1::/64"
	mgmtRouter6 = "2001:db8:1::1"
)

// mgmtSLAAC is the address the box's management port (MgmtMAC) takes in
// mgmtPrefix6 by SLAAC: the EUI-64 of its MAC.
const mgmtSLAAC = "2001:db8:1:0:5054:ff:fe12:3456"

// TestManagementNetwork cables the box's management port to a namespace
// that plays the site's network: a router advertising an IPv6 prefix
// (Debian's radvd) and a switch port running Debian's lldpd. The box takes
// a SLAAC address and is reached over it by the host command (-host
// [v6]); lldpd shows the box's name and both management addresses; a
// static IPv6 address applies in place and is confirmed over itself, and
// a wrong one reverts by itself.
func TestManagementNetwork(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	text, err := config.SetManagementAddress("ncpos.toml", config.DefaultTOML(),
		config.Management{Address: mgmtBox4 + "/24", Gateway: mgmtRouter4, IPv6: config.IPv6Slaac})
	if err != nil {
		t.Fatal(err)
	}
	img := testImage(t, "mgmt-static", text)
	cables, wires := newCables(t, 1)
	n, tap := tapNetns(t, cables[0], "mgmt")
	// The lab's namespaces keep IPv6 off their links; this one is the
	// site's IPv6 network.
	for _, args := range [][]string{
		{"netns", "exec", n.Name, "sysctl", "-q", "-w", "net.ipv6.conf." + tap + ".disable_ipv6=0"},
		{"-n", n.Name, "addr", "add", mgmtRouter4 + "/24", "dev", tap},
		{"-n", n.Name, "-6", "addr", "add", mgmtRouter6 + "/64", "dev", tap, "nodad"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	radvdtest.Start(t, n.Name, tap, mgmtPrefix6)
	lldpd := lldpdtest.Start(t, n.Name, tap, "switch1")
	// The test's forward of the status port, as QEMU's user-mode network
	// would: into the namespace, to the box's IPv4 address.
	proxy := nsProxy(t, n, net.JoinHostPort(mgmtBox4, "443"))
	v, _ := boot(t, img, false, func(o *Options) {
		o.MgmtWire, o.StatusPort, o.HTTPPort, o.Forwards = &wires[0], proxy, 0, nil
	})

	// SLAAC from the router's advertisements.
	for deadline := time.Now().Add(v.Within(time.Minute)); !slices.Contains(mgmtAddresses(t, v), mgmtSLAAC+"/64"); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("the management port has %q, no SLAAC address %s", mgmtAddresses(t, v), mgmtSLAAC)
		}
	}
	t.Logf("management port addresses: %q", mgmtAddresses(t, v))
	// An address just set takes a few seconds to answer: the kernel
	// checks it is unique on the link, and statusd then listens on it.
	get := func(host string) (out string, err error) {
		for deadline := time.Now().Add(v.Within(20 * time.Second)); ; time.Sleep(time.Second) {
			if out, err = nsCommand(t, v, n, "config", "get", "-host", host); err == nil || time.Now().After(deadline) {
				return out, err
			}
		}
	}
	if out, err := get("[" + mgmtSLAAC + "]"); err != nil || !strings.Contains(out, "ipv6 = \"slaac\"") {
		t.Fatalf("ncpos config get -host [%s] from the site's network: %v\n%s", mgmtSLAAC, err, out)
	}

	// The switch sees the box, by its name and both addresses.
	lldpd.Hears(t, "ncpos", v.Within(time.Minute))
	out, err := exec.Command("ip", "netns", "exec", n.Name, "lldpcli", "-u", lldpd.Socket(), "show", "neighbors", "details").CombinedOutput()
	if err != nil {
		t.Fatalf("lldpcli: %v: %s", err, out)
	}
	for _, want := range []string{"SysName:      ncpos", "MgmtIP:       " + mgmtBox4, "MgmtIP:       " + mgmtSLAAC, "PortID:       ifname eth0", "PortDescr:    MGMT, management"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("lldpcli does not show %q:\n%s", want, out)
		}
	}

	t.Logf("lldpd on the switch port shows the box:\n%s", out)

	// A static IPv6 address in place, confirmed over itself.
	c := configClient(v)
	ctx := context.Background()
	static := func(addr6, gw6 string, within int) *api.ConfigApplied {
		t.Helper()
		cur, err := c.Config(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next, err := config.SetManagementAddress("ncpos.toml", []byte(cur.Text),
			config.Management{Address: mgmtBox4 + "/24", Gateway: mgmtRouter4, IPv6: config.IPv6Static, Address6: addr6, Gateway6: gw6})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: string(next), Replaces: cur.Version, ConfirmWithin: &within, Comment: "static IPv6 " + addr6})
		if err != nil {
			t.Fatalf("static IPv6 %s: %v", addr6, err)
		}
		return res
	}
	res := static("2001:db8:1::10/64", mgmtRouter6, 300)
	if out, err := get("[2001:db8:1::10]"); err != nil || !strings.Contains(out, "address6 = \"2001:db8:1::10/64\"") {
		t.Fatalf("the static IPv6 address does not answer: %v\n%s", err, out)
	}
	if out, err := nsCommand(t, v, n, "config", "confirm", "-host", "2001:db8:1::10", "-version", fmt.Sprint(res.Version.Number)); err != nil {
		t.Fatalf("confirming over the static IPv6 address: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(v.Within(30 * time.Second)); slices.Contains(mgmtAddresses(t, v), mgmtSLAAC+"/64"); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Errorf("the SLAAC address stays beside the static one: %q", mgmtAddresses(t, v))
			break
		}
	}

	// An address the site's network does not route: nobody confirms it
	// over itself, and the box goes back by itself.
	bad := static("2001:db8:99::10/64", "", 30)
	v2 := waitSettledOnBox(t, c, bad.Version.Number, v.Within(2*time.Minute))
	if v2.State != api.VersionReverted {
		t.Fatalf("the unreachable IPv6 address ended %s, want reverted", v2.State)
	}
	t.Logf("the unreachable IPv6 address went back by itself: version %d %s (%s)", v2.Number, v2.State, v2.Reason)
	if out, err := get("[2001:db8:1::10]"); err != nil {
		t.Errorf("after the revert the static IPv6 address does not answer: %v\n%s", err, out)
	}
}

// mgmtAddresses are the box's management port's addresses as it says.
func mgmtAddresses(t *testing.T, v *VM) []string {
	t.Helper()
	for _, i := range system(t, v).Interfaces {
		if i.Port == "MGMT" {
			return i.Addresses
		}
	}
	return nil
}

// nsProxy forwards TCP connections to 127.0.0.1 on the port it returns
// into the namespace n, to target. Its cleanup ends every connection and
// waits for them, before the namespace goes (the test made n first).
func nsProxy(t *testing.T, n *lab.Netns, target string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				var box net.Conn
				if err := n.Do(func() (err error) { box, err = net.DialTimeout("tcp", target, 10*time.Second); return err }); err != nil {
					return
				}
				track(box)
				defer box.Close()
				done := make(chan struct{})
				go func() { io.Copy(box, c); box.(*net.TCPConn).CloseWrite(); close(done) }()
				io.Copy(c, box)
				<-done
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// nsCommand runs the host command inside the namespace n, as an operator
// on the site's network would, trusting the box by the key its serial
// console shows.
func nsCommand(t *testing.T, v *VM, n *lab.Netns, args ...string) (string, error) {
	t.Helper()
	dir, trust := operatorFlags(t, v)
	full := append(append([]string{"netns", "exec", n.Name, ncposCommand(t)}, args...), trust...)
	cmd := exec.Command("ip", full...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
