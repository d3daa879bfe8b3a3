package mgmtport

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/testenv"
)

const (
	dhcpEnv = "NCPOS_MGMTPORT_DHCP" // a stand-in DHCP client: the pid file it writes
	port    = "ncpt-mgmt"
	lease   = "10.0.2.15/24"
	leaseGW = "10.0.2.2"
)

// TestMain plays the DHCP client when asked: it takes lease on port and a
// default route through leaseGW, as gokrazy's does, writes its pid, and
// runs until it is stopped.
func TestMain(m *testing.M) {
	if pidFile := os.Getenv(dhcpEnv); pidFile != "" {
		os.Exit(fakeDHCP(pidFile))
	}
	os.Exit(m.Run())
}

func fakeDHCP(pidFile string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	link, err := netlink.LinkByName(port)
	if err == nil {
		a, _ := netlink.ParseAddr(lease)
		err = netlink.AddrReplace(link, a)
	}
	if err == nil {
		err = netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: defaultDst(), Gw: net.ParseIP(leaseGW), Priority: routePriority})
	}
	if err != nil {
		os.Stderr.WriteString("fake dhcp: " + err.Error() + "\n")
		return 1
	}
	os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644)
	<-term
	return 0
}

// testPort makes the management port a veth end in the test's namespace,
// its DHCP client the test binary itself (TestMain), which writes its pid
// to the returned file; the port is closed when the test ends.
func testPort(t *testing.T, linger time.Duration) (*Port, string) {
	t.Helper()
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: "ncpt-peer"}); err != nil {
		t.Fatal(err)
	}
	peer, _ := netlink.LinkByName("ncpt-peer")
	netlink.LinkSetUp(peer)
	pidFile := filepath.Join(t.TempDir(), "dhcp.pid")
	p := &Port{Ifname: port, DHCP: []string{os.Args[0]}, Linger: linger}
	t.Setenv(dhcpEnv, pidFile) // the client's environment
	t.Cleanup(func() { p.Close() })
	return p, pidFile
}

// TestPortInPlace runs in a network namespace of its own (the test runs
// itself again with CLONE_NEWNET, as root), on a veth end that stands for
// the management port: DHCP, then a static address on another subnet,
// another on the same subnet, and DHCP again. Each time the DHCP client
// runs only while DHCP is asked for, the address given up lingers and
// then goes, and the default route is the one asked for alone.
func TestPortInPlace(t *testing.T) {
	if testenv.InNetNS(t) {
		portInPlace(t)
	}
}

func portInPlace(t *testing.T) {
	p, pidFile := testPort(t, time.Second)

	if err := (&Port{Ifname: "ncpt-none"}).Set(config.Management{DHCP: true}); err == nil || !strings.Contains(err.Error(), "ncpt-none") {
		t.Errorf("a port that is not there: error %v, want one naming it", err)
	}

	must := func(m config.Management) {
		t.Helper()
		if err := p.Set(m); err != nil {
			t.Fatal(err)
		}
	}
	must(config.Management{DHCP: true})
	dhcp := waitPid(t, pidFile, 0)
	wantState(t, p, []string{lease}, leaseGW)

	// The client that exits runs again.
	syscall.Kill(dhcp, syscall.SIGKILL)
	dhcp = waitPid(t, pidFile, dhcp)

	// Another subnet: the lease lingers, deprecated, then goes; the
	// client has stopped.
	must(config.Management{Address: "192.0.2.10/24", Gateway: "192.0.2.1"})
	if err := syscall.Kill(dhcp, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the DHCP client (pid %d) still runs on a static address: %v", dhcp, err)
	}
	st, _ := p.State()
	if !slices.Contains(st.Addresses, lease) || !slices.Contains(st.Addresses, "192.0.2.10/24") || st.Gateway != "192.0.2.1" {
		t.Errorf("right after the change: %+v, want both addresses (the lease lingering) and the gateway 192.0.2.1", st)
	}
	wantState(t, p, []string{"192.0.2.10/24"}, "192.0.2.1")

	// The same subnet: the new address outlives the one it replaces,
	// though it was its secondary.
	must(config.Management{Address: "192.0.2.11/24"})
	wantState(t, p, []string{"192.0.2.11/24"}, "")
	must(config.Management{Address: "192.0.2.11/24"}) // again: nothing to do

	// DHCP again.
	must(config.Management{DHCP: true})
	waitPid(t, pidFile, dhcp)
	wantState(t, p, []string{lease}, leaseGW)
}

// waitPid waits until the DHCP client has written a pid other than old.
func waitPid(t *testing.T, pidFile string, old int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		if pid, err := strconv.Atoi(string(b)); err == nil && pid != old {
			return pid
		}
	}
	t.Fatalf("the DHCP client did not run (pid file %s)", pidFile)
	return 0
}

// wantState waits until the port holds exactly addrs and gateway.
func wantState(t *testing.T, p *Port, addrs []string, gateway string) {
	t.Helper()
	var st State
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		if st, err = p.State(); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(st.Addresses, addrs) && st.Gateway == gateway {
			t.Logf("%+v", st)
			return
		}
	}
	t.Fatalf("management port: %+v, want addresses %v and gateway %q", st, addrs, gateway)
}

// TestPortRevertsHalfChange: a change that fails part way (a gateway
// off the new subnet, after the DHCP client stopped and the address
// before began to linger) is undone whole by setting the port back: the
// address before stays past its linger, with its route, and the DHCP
// client runs again.
func TestPortRevertsHalfChange(t *testing.T) {
	if testenv.InNetNS(t) {
		portRevertsHalfChange(t)
	}
}

func portRevertsHalfChange(t *testing.T) {
	p, pidFile := testPort(t, time.Second)
	broken := config.Management{Address: "198.51.100.10/24", Gateway: "203.0.113.1"} // a gateway the port cannot reach

	static := config.Management{Address: "192.0.2.10/24", Gateway: "192.0.2.1"}
	if err := p.Set(static); err != nil {
		t.Fatal(err)
	}
	if err := p.Set(broken); err == nil || !strings.Contains(err.Error(), "203.0.113.1") {
		t.Fatalf("a gateway off the subnet: %v, want an error naming it", err)
	}
	if err := p.Set(static); err != nil {
		t.Fatalf("setting the port back: %v", err)
	}
	time.Sleep(p.Linger + time.Second) // past the linger of what the change gave up
	wantState(t, p, []string{"192.0.2.10/24"}, "192.0.2.1")

	if err := p.Set(config.Management{DHCP: true}); err != nil {
		t.Fatal(err)
	}
	dhcp := waitPid(t, pidFile, 0)
	wantState(t, p, []string{lease}, leaseGW)
	if err := p.Set(broken); err == nil {
		t.Fatal("a gateway off the subnet was taken")
	}
	if err := syscall.Kill(dhcp, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the DHCP client (pid %d) still runs after a change to a static address: %v", dhcp, err)
	}
	if err := p.Set(config.Management{DHCP: true}); err != nil {
		t.Fatalf("setting the port back to DHCP: %v", err)
	}
	waitPid(t, pidFile, dhcp)
	time.Sleep(p.Linger + time.Second)
	wantState(t, p, []string{lease}, leaseGW)
}

// TestPortGolden sets the port to each state twice, as router7's
// netconfig tests do: the addresses, routes and DHCP client it leaves
// are the golden file's, and a state set again leaves the port exactly
// as it was.
func TestPortGolden(t *testing.T) {
	if testenv.InNetNS(t) {
		portGolden(t)
	}
}

func portGolden(t *testing.T) {
	p, pidFile := testPort(t, time.Hour) // an address given up lingers through the test
	defer p.Close()
	var out strings.Builder
	for _, s := range []struct {
		what string
		m    config.Management
	}{
		{"static, with a gateway", config.Management{Address: "192.0.2.10/24", Gateway: "192.0.2.1"}},
		{"another address on the subnet, no gateway", config.Management{Address: "192.0.2.11/24"}},
		{"DHCP", config.Management{DHCP: true}},
		{"static on another subnet", config.Management{Address: "198.51.100.7/24", Gateway: "198.51.100.1"}},
	} {
		var before string
		for again := range 2 {
			fmt.Fprintf(&out, "## %s%s\n", s.what, map[int]string{1: ", again"}[again])
			if err := p.Set(s.m); err != nil {
				t.Fatalf("%s: %v", s.what, err)
			}
			if s.m.DHCP {
				waitPid(t, pidFile, 0)
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					if st, _ := p.State(); slices.Contains(st.Addresses, lease) && st.Gateway == leaseGW {
						break // the stand-in client took its lease
					}
					if time.Now().After(deadline) {
						t.Fatal("the DHCP client took no lease")
					}
				}
			}
			state := linkState(t, p)
			out.WriteString(state)
			if again == 1 && state != before {
				t.Errorf("%s, set again, changed the port:\n%s\nwas:\n%s", s.what, state, before)
			}
			before = state
		}
		os.Remove(pidFile)
	}
	testenv.Golden(t, "port.golden", out.String())
}

// linkState is the port's IPv4 addresses (lingering: given up, valid for
// a while), its routes and whether the DHCP client runs.
func linkState(t *testing.T, p *Port) string {
	t.Helper()
	link, err := netlink.LinkByName(p.Ifname)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range addrs {
		kind := "valid"
		if a.ValidLft > 0 && a.ValidLft < math.MaxUint32 {
			kind = "lingering"
		}
		lines = append(lines, fmt.Sprintf("address %s, %s", a.IPNet, kind))
	}
	routes, err := netlink.RouteList(link, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		dst := "default"
		if !isDefault(r) {
			dst = r.Dst.String()
		}
		lines = append(lines, fmt.Sprintf("route %s via %v, metric %d", dst, r.Gw, r.Priority))
	}
	slices.Sort(lines)
	st, _ := p.State()
	lines = append(lines, fmt.Sprintf("DHCP client runs: %v", st.DHCP))
	return strings.Join(lines, "\n") + "\n"
}
