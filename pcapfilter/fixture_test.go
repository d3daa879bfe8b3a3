package pcapfilter

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/internal/fixtures"
	"golang.org/x/net/bpf"
)

// The fixture is traffic dumpcap captured on a veth (scripts/testdata.sh
// made it: ARP and neighbour discovery, ICMP, TCP and UDP over IPv4 and
// IPv6, a frame under VLAN 42 and one under VLAN 42 then 7), and which
// frames tcpdump keeps for each of a list of filters.
const (
	trafficCapture = "testdata/traffic.pcapng"
	trafficTcpdump = "testdata/traffic.tcpdump"
)

// TestTrafficFixture: each filter keeps, of real traffic, the frames
// tcpdump keeps, libpcap's quirks with VLAN tags included (a vlan test
// moves every test after it past a tag, even under not).
func TestTrafficFixture(t *testing.T) {
	frames := fixtures.Frames(t, trafficCapture)
	for _, keep := range fixtures.TcpdumpKeeps(t, trafficTcpdump) {
		expr := keep.Filter
		prog, err := Compile(expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", expr, err)
			continue
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		var kept []int
		for n, f := range frames {
			if accepts(t, vm, f) {
				kept = append(kept, n+1)
			}
		}
		if !slices.Equal(kept, keep.Frames) {
			t.Errorf("%q keeps frames %v, tcpdump keeps %v", expr, kept, keep.Frames)
		}
	}
}

// TestTrafficFixtureIsTcpdumps: traffic.tcpdump is what tcpdump keeps now:
// frames are told apart by their times.
func TestTrafficFixtureIsTcpdumps(t *testing.T) {
	tcpdump := findTcpdump(t)
	times := func(expr string) []string {
		out, err := exec.Command(tcpdump, "-r", trafficCapture, "-n", "-tt", expr).Output()
		if err != nil {
			t.Fatalf("tcpdump %q: %v", expr, err)
		}
		var ts []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				ts = append(ts, f[0])
			}
		}
		return ts
	}
	all := times("")
	for _, keep := range fixtures.TcpdumpKeeps(t, trafficTcpdump) {
		expr := keep.Filter
		var kept []int
		for _, ts := range times(expr) {
			kept = append(kept, slices.Index(all, ts)+1)
		}
		if !slices.Equal(kept, keep.Frames) {
			t.Errorf("tcpdump keeps frames %v of %q, the fixture says %v", kept, expr, keep.Frames)
		}
	}
}
