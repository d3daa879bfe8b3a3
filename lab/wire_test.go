package lab_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/lab"
)

// TestMixedSegment pairs a port whose peer cannot transmit redirected
// frames (a veth whose far end has neither an XDP program nor GRO, as
// upstream e1000e has no XDP transmit) with one that can: the forwarder
// runs the direction into it generic, says why, and every frame crosses
// both ways.
func TestMixedSegment(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks := attachSinks(t, l, false)
	if _, err := sinks.SKBSink(0, 1); err != nil {
		t.Fatal(err)
	}
	d := startForwarderd(t, l, "-engine", "xdp")
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a, b := st.Ports[0], st.Ports[1]
	t.Logf("%s: %s (%s); %s: %s (%s)", a.Interface, a.Attach, a.AttachWhy, b.Interface, b.Attach, b.AttachWhy)
	if a.Attach != "generic" || !strings.Contains(a.AttachWhy, "ndo-xmit") {
		t.Errorf("%s attached %s because %q, want generic because its peer has no XDP transmit", a.Interface, a.Attach, a.AttachWhy)
	}
	if b.Attach != "native" {
		t.Errorf("%s attached %s (%s), want native", b.Interface, b.Attach, b.AttachWhy)
	}
	const n = 100
	for side := 0; side < 2; side++ {
		snd, err := l.Sender(0, side)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snd.Close() })
		for range n {
			if err := snd.Send(frames.QinQ(frames.UDPFrame(200, 1, 2), 10, 20)); err != nil {
				t.Fatal(err)
			}
		}
		var got uint64
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got, _, err = sinks.Count(0, 1-side); err != nil {
				t.Fatal(err)
			}
			if got >= n {
				break
			}
		}
		if got != n {
			t.Errorf("side %d: %d of %d frames arrived", side, got, n)
		}
	}
}

// TestRedirectFailuresCounted makes the kernel refuse redirects after the
// program returned (the peer's MTU lowered behind the forwarder's back) and
// wants them counted per port as redirect_too_big, on /status and
// /metrics.
func TestRedirectFailuresCounted(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks := attachSinks(t, l, false)
	d := startForwarderd(t, l, "-engine", "xdp")
	if len(mustStatus(t, d).Notes) > 0 {
		t.Fatalf("forwarderd notes: %v", mustStatus(t, d).Notes)
	}
	peer := l.Segments[0].Ports[1]
	if err := l.FW.Do(func() error {
		lk, err := netlink.LinkByName(peer)
		if err != nil {
			return err
		}
		return netlink.LinkSetMTU(lk, 1500)
	}); err != nil {
		t.Fatal(err)
	}
	snd := sender(t, l)
	const n = 20
	big := frames.QinQ(frames.UDPFrame(1514, 1, 2), 10, 20) // 1522 > 1500 + 18
	for range n {
		if err := snd.Send(big); err != nil {
			t.Fatal(err)
		}
	}
	var got uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = mustStatus(t, d).Ports[0].Drops["redirect_too_big"]; got >= n {
			break
		}
	}
	if got != n {
		t.Errorf("redirect_too_big = %d, want %d (drops %v)", got, n, mustStatus(t, d).Ports[0].Drops)
	}
	if arrived, _, _ := sinks.Count(0, 1); arrived != 0 {
		t.Errorf("%d too-big frames arrived", arrived)
	}
	m, err := d.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m), `reason="redirect_too_big"`) {
		t.Errorf("/metrics has no redirect_too_big drops")
	}
}

func mustStatus(t *testing.T, d *lab.Daemon) forwarderapi.Status {
	t.Helper()
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestFullRingCounted floods a segment into a far end that falls behind
// (its NAPI a thread taking turns with the generator), so that the peer
// port's transmit ring overflows, and wants every frame that entered the
// datapath accounted for once: sent by the peer port, or dropped for one
// reason. A full ring shows as kernel_tx on the peer port (the veth
// counts its refusals in tx_dropped), never twice.
func TestFullRingCounted(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks := attachSinks(t, l, false)
	d := startForwarderd(t, l, "-engine", "xdp")
	restore, err := sinks.SlowSink(0, 1, 0) // the generator's cpu
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restore(); err != nil {
			t.Error(err)
		}
	})
	g, err := l.Generator(0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if _, err := g.Run(context.Background(), xdptraffic.Send{Frame: frames.UDPFrame(64, 1, 2), For: time.Second}); err != nil {
		t.Fatal(err)
	}
	// Settled: two samples with nothing new.
	var st forwarderapi.Status
	var last string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		st = mustStatus(t, d)
		now := fmt.Sprint(st.Ports[0].RxPackets, st.Ports[1].TxPackets, st.Ports[0].Drops, st.Ports[1].Drops)
		if now == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("counters still moving 10 s after the flood: %s", now)
		}
		last = now
	}
	in, out := st.Ports[0], st.Ports[1]
	var inDrops uint64
	for reason, n := range in.Drops {
		if reason != "kernel_rx" { // before the program: not among its frames
			inDrops += n
		}
	}
	full, lost := out.Drops["kernel_tx"], out.Drops["egress_lost"]
	t.Logf("entered %s: %d; sent by %s: %d; dropped at %s: %v; at %s: kernel_tx %d, egress_lost %d",
		in.Name, in.RxPackets, out.Name, out.TxPackets, in.Name, in.Drops, out.Name, full, lost)
	if full == 0 {
		t.Fatalf("the far end's ring never overflowed (drops %v): the test shows nothing", out.Drops)
	}
	if got := out.TxPackets + inDrops + full + lost; got != in.RxPackets {
		t.Errorf("sent and dropped add up to %d, %d entered", got, in.RxPackets)
	}
	if arrived, _, err := sinks.Count(0, 1); err != nil || arrived != out.TxPackets {
		t.Errorf("the far end counted %d (%v), %s sent %d", arrived, err, out.Name, out.TxPackets)
	}
}
