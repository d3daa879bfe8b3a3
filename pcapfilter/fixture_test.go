package pcapfilter

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/ncpos/ncpos/pcapng"
)

// The fixture is traffic dumpcap captured on a veth (scripts/testdata.sh
// made it: ARP and neighbour discovery, ICMP, TCP and UDP over IPv4 and
// IPv6, a frame under VLAN 42 and one under VLAN 42 then 7), and which
// frames tcpdump keeps for each of a list of filters.
const (
	trafficCapture = "testdata/traffic.pcapng"
	trafficTcpdump = "testdata/traffic.tcpdump"
)

// trafficFrames reads the fixture's frames.
func trafficFrames(t *testing.T) [][]byte {
	t.Helper()
	f, err := os.Open(trafficCapture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapng.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := b.(*pcapng.PacketBlock); ok {
			out = append(out, p.Data)
		}
	}
}

// tcpdumpKeeps reads the fixture's filters and the frames (from 1) tcpdump
// keeps of each.
func tcpdumpKeeps(t *testing.T) (filters []string, keeps [][]int) {
	t.Helper()
	b, err := os.ReadFile(trafficTcpdump)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		expr, nums, _ := strings.Cut(line, "\t")
		var keep []int
		for _, f := range strings.Fields(nums) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s: %q", trafficTcpdump, line)
			}
			keep = append(keep, n)
		}
		filters, keeps = append(filters, expr), append(keeps, keep)
	}
	return filters, keeps
}

// TestTrafficFixture: each filter keeps, of real traffic, the frames
// tcpdump keeps, libpcap's quirks with VLAN tags included (a vlan test
// moves every test after it past a tag, even under not).
func TestTrafficFixture(t *testing.T) {
	frames := trafficFrames(t)
	filters, keeps := tcpdumpKeeps(t)
	for i, expr := range filters {
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
		if !slices.Equal(kept, keeps[i]) {
			t.Errorf("%q keeps frames %v, tcpdump keeps %v", expr, kept, keeps[i])
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
	filters, keeps := tcpdumpKeeps(t)
	for i, expr := range filters {
		var kept []int
		for _, ts := range times(expr) {
			kept = append(kept, slices.Index(all, ts)+1)
		}
		if !slices.Equal(kept, keeps[i]) {
			t.Errorf("tcpdump keeps frames %v of %q, the fixture says %v", kept, expr, keeps[i])
		}
	}
}
