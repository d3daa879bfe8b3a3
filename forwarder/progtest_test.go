package forwarder_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/testenv"
)

func requireRoot(t testing.TB) {
	t.Helper()
	testenv.NeedRoot(t, testenv.Lab, "BPF")
}

// TestBPFParserMatchesGo runs the kernel's parser (port_service under
// BPF_PROG_RUN) and ParseFrame on the same frames, valid, broken and
// mutated, and wants the same malformations and the same flow key, so that
// both engines count alike.
//
// port_forward's malformations are held to ParseFrame's too, at the
// default MTU, where it takes the first buffer's length for the frame's,
// and at a jumbo MTU, where it asks the kernel, as service mode always
// does. These frames each come in one buffer; TestBPFSplitFrame covers
// the kernel's second look at a split one.
func TestBPFParserMatchesGo(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		prog string
		mtu  int
	}{
		{bpf.DatapathProgPortService, config.DefaultMTU},
		{bpf.DatapathProgPortForward, config.DefaultMTU},
		{bpf.DatapathProgPortForward, 9000},
	} {
		t.Run(fmt.Sprintf("%s-mtu-%d", c.prog, c.mtu), func(t *testing.T) {
			pt, err := forwarder.NewProgramTesterOf(c.prog, false, c.mtu)
			if err != nil {
				t.Fatal(err)
			}
			defer pt.Close()
			parserMatchesGo(t, pt, c.prog == bpf.DatapathProgPortService)
		})
	}
}

// parserMatchesGo compares pt's malformations, and its flow keys when it
// keys flows, with ParseFrame's.
func parserMatchesGo(t *testing.T, pt *forwarder.ProgramTester, keys bool) {
	frames := append(seedFrames(), mutate(seedFrames(), 3000)...)
	var keyed, malformed int
	defer func() {
		t.Logf("%d frames: %d with a flow key, %d malformed", len(frames), keyed, malformed)
		if (keys && keyed < 100) || malformed < 100 {
			t.Errorf("the mutated frames exercise too little of the parser")
		}
	}()
	for i, f := range frames {
		got, err := pt.Run(f)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want := forwarder.ParseFrame(f)
		if !keys {
			want.HasKey, want.Key, want.TCPFlags = false, forwarder.FlowKey{}, 0
		}
		if got.HasKey {
			keyed++
		}
		if got.Malformed != 0 {
			malformed++
		}
		if got.Malformed != want.Malformed || got.HasKey != want.HasKey || (want.HasKey && (got.Key != want.Key || got.TCPFlags != want.TCPFlags)) {
			t.Errorf("frame %d %x:\n BPF %v key=%v %+v flags=%#x\n  Go %v key=%v %+v flags=%#x", i, f,
				reasons(got.Malformed), got.HasKey, got.Key, got.TCPFlags,
				reasons(want.Malformed), want.HasKey, want.Key, want.TCPFlags)
		}
	}
}

// TestBPFSplitFrame: a frame that arrives in several buffers is counted
// whole and is not malformed, whether the port's MTU made the program ask
// the kernel for the frame's length (jumbo) or take the first buffer's
// (the default MTU, where a driver that splits a frame all the same makes
// the program ask when a length check fails).
func TestBPFSplitFrame(t *testing.T) {
	requireRoot(t)
	split := frames.UDPFrame(6000, 1, 2) // more than a page: BPF_PROG_RUN splits it
	short := frames.UDPFrame(6000, 1, 2)
	short[14+3] -= 0x10 // IPv4 total length 16 bytes short: padding, not malformed
	long := frames.UDPFrame(6000, 1, 2)
	long[14+3] += 0x10 // 16 bytes past the frame: malformed
	for _, mtu := range []int{config.DefaultMTU, 9000} {
		for _, c := range []struct {
			name      string
			frame     []byte
			malformed bool
		}{{"whole", split, false}, {"padded", short, false}, {"too-long", long, true}} {
			t.Run(fmt.Sprintf("mtu-%d/%s", mtu, c.name), func(t *testing.T) {
				pt, err := forwarder.NewProgramTesterOf(bpf.DatapathProgPortForward, false, mtu)
				if err != nil {
					t.Fatal(err)
				}
				defer pt.Close()
				p, err := pt.Run(c.frame)
				if err != nil {
					t.Fatal(err)
				}
				if got := p.Malformed != 0; got != c.malformed {
					t.Errorf("malformed %v (%v), want %v", got, reasons(p.Malformed), c.malformed)
				}
				n, b, err := pt.Counted()
				if err != nil {
					t.Fatal(err)
				}
				if n != 1 || b != uint64(len(c.frame)) {
					t.Errorf("counted %d frames, %d bytes; want 1 frame, %d bytes", n, b, len(c.frame))
				}
			})
		}
	}
}

// TestBPFCopiesLLDP: the port program hands forwarderd a copy of every
// untagged LLDP frame to an LLDP group address, whole up to 1518 bytes,
// and of nothing else: of the senders forwarderd keeps as neighbours, one
// per 100 ms each, whatever the others send; of the others, one per 20 ms
// on the port.
func TestBPFCopiesLLDP(t *testing.T) {
	requireRoot(t)
	pt, err := forwarder.NewProgramTester()
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()
	lldp := frames.LLDP(frames.MACB, "eth1", "neighbour-a", 120)
	whole := frames.Ethernet(frames.LLDPGroup, frames.MACB, 0x88cc, bytes.Repeat([]byte{0x0a}, 1500))
	long := frames.Ethernet(frames.LLDPGroup, frames.MACB, 0x88cc, bytes.Repeat([]byte{0x0a}, 1600))
	unicast := append(append([]byte{}, frames.MACA[:]...), lldp[6:]...)
	known := frames.LLDP(frames.MACA, "eth1", "neighbour-k", 120)
	// BPF_PROG_RUN runs the program as if the frame came in on
	// loopback, ifindex 1.
	if err := pt.KnowLLDPSender(1, frames.MACA); err != nil {
		t.Fatal(err)
	}
	lldpPace(t, pt, lldp, known)
	for _, c := range []struct {
		name  string
		frame []byte
		want  []byte
	}{
		{"lldp", lldp, lldp},
		{"a known sender's", known, known},
		{"tagged lldp", frames.VLAN(lldp, 42), nil},
		{"lldp to a unicast address", unicast, nil},
		{"udp", frames.UDPFrame(64, 1, 2), nil},
		{"lldp of 1514 bytes", whole, whole},
		{"lldp of 1614 bytes", long, long[:1518]},
	} {
		time.Sleep(150 * time.Millisecond) // past the gaps between copies
		if _, err := pt.Run(c.frame); err != nil {
			t.Fatal(err)
		}
		got := pt.Copied()
		if c.want == nil {
			if got != nil {
				t.Errorf("%s: copied %x", c.name, got)
			}
			continue
		}
		if want := append([]byte("ifindex 1:"), c.want...); !bytes.Equal(got, want) {
			t.Errorf("%s: copied %d bytes %.80x…, want %d bytes %.80x…", c.name, len(got), got, len(want), want)
		}
	}
}

// lldpPace sends LLDP frames of an unknown sender (other) and a known one
// at once and after short waits, and wants copies at each sender's pace:
// the unknown one's one per 20 ms on the port, the known one's one per
// 100 ms, whatever the other sends. The program's clock is coarse (a
// jiffy): a run with a frame too near a gap to tell is run again.
func lldpPace(t *testing.T, pt *forwarder.ProgramTester, other, known []byte) {
	t.Helper()
	const portGap, senderGap, near = 20 * time.Millisecond, 100 * time.Millisecond, 8 * time.Millisecond
	steps := []struct {
		frame []byte
		known bool
		wait  time.Duration // after the step before
	}{
		{other, false, 0}, {other, false, 0}, // the port's gap
		{known, true, 0}, {known, true, 0}, // the known sender's gap: the port's is spent
		{known, true, 40 * time.Millisecond}, {other, false, 0}, // past the port's gap, not the sender's
		{other, false, 0}, {known, true, 80 * time.Millisecond}, // past the sender's gap
	}
	for attempt := 1; ; attempt++ {
		time.Sleep(senderGap + 50*time.Millisecond)
		var want [][]byte
		last := map[bool]time.Time{}
		clear := true
		for _, s := range steps {
			time.Sleep(s.wait)
			now := time.Now()
			gap := map[bool]time.Duration{false: portGap, true: senderGap}[s.known]
			copied := true
			if t, ok := last[s.known]; ok {
				since := now.Sub(t)
				copied = since >= gap
				clear = clear && (since < gap-near || since > gap+near)
			}
			if copied {
				last[s.known] = now
				want = append(want, s.frame)
			}
			if _, err := pt.Run(s.frame); err != nil {
				t.Fatal(err)
			}
		}
		var got [][]byte
		for c := pt.Copied(); c != nil; c = pt.Copied() {
			got = append(got, c)
		}
		if !clear && attempt < 5 {
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("copied %d frames, want %d (attempt %d, clear of the gaps: %v)", len(got), len(want), attempt, clear)
		}
		for i := range want {
			if w := append([]byte("ifindex 1:"), want[i]...); !bytes.Equal(got[i], w) {
				t.Errorf("copy %d: %.60x…, want %.60x…", i, got[i], w)
			}
		}
		return
	}
}
