package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/lab"
)

// labConfig is a configuration of the lab's box: segment seg0 on LAN1 and
// LAN2, and the segments given after it.
func labConfig(extra string) string {
	return `platform = "generic"
services = ["forwarderd"]
[[segment]]
name = "seg0"
ports = ["LAN1", "LAN2"]
` + extra
}

const labSeg1 = `[[segment]]
name = "seg1"
ports = ["LAN3", "LAN4"]
`

// TestReconfigureInPlace changes a running forwarderd's segments while a
// paced stream crosses seg0, whose settings never change: seg1 is added,
// its MTU raised, it is removed, then the engine's mode changes. Until the
// mode changes, seg0 keeps its programs (the same program IDs) and its
// counters, and loses no frame of the stream; seg1 forwards after each
// change that attaches it.
func TestReconfigureInPlace(t *testing.T) {
	l := newLab(t, 2, 1)
	sinks := attachSinks(t, l, false)
	cfg, write := configFile(t)
	write(labConfig(""))
	d := startForwarderdOn(t, l, cfg)
	progs := func(seg int) [2]uint32 {
		t.Helper()
		var ids [2]uint32
		for side, name := range l.Segments[seg].Ports {
			link, err := l.FW.Link(name)
			if err != nil {
				t.Fatal(err)
			}
			if x := link.Attrs().Xdp; x != nil && x.Attached {
				ids[side] = x.ProgId
			}
		}
		return ids
	}
	seg0 := progs(0)
	if seg0[0] == 0 || seg0[1] == 0 || progs(1) != [2]uint32{} {
		t.Fatalf("programs at start: seg0 %v, seg1 %v; want seg0's only", seg0, progs(1))
	}

	// The stream through seg0, a to b, for the whole of the changes.
	g, err := l.Generator(0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	const rate, frameCount = 10_000, 60_000 // six seconds
	stream := frames.UDPFrame(128, 10000, 9)
	bench.PutStamp(stream, bench.Stamp{Trial: 7})
	sent := make(chan xdptraffic.Sent, 1)
	go func() {
		s, err := g.Run(context.Background(), xdptraffic.Send{Frame: stream, Frames: frameCount, RatePPS: rate})
		if err != nil {
			t.Error(err)
		}
		sent <- s
	}()

	crosses := func(what string, seg int, frame []byte) {
		t.Helper()
		snd, err := l.Sender(seg, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer snd.Close()
		before, _, _ := sinks.Count(seg, 1)
		deadline := time.Now().Add(5 * time.Second)
		for {
			if err := snd.Send(frame); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if after, _, _ := sinks.Count(seg, 1); after > before {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no %d-byte frame crossed %s in 5s", what, len(frame), l.Segments[seg].Name)
			}
		}
	}
	reconfigure := func(what, text string, want forwarderapi.Reconfigured) time.Time {
		t.Helper()
		write(text)
		start := time.Now()
		r, err := d.Reconfigure(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %+v (%v)", what, r, time.Since(start).Round(time.Millisecond))
		if r.Error != "" || len(r.Failed) > 0 || !slices.Equal(r.Kept, want.Kept) || !slices.Equal(r.Detached, want.Detached) ||
			!slices.Equal(r.Attached, want.Attached) || r.Restarted != want.Restarted {
			t.Fatalf("%s: forwarderd did %+v, want %+v", what, r, want)
		}
		return start
	}
	qinq := frames.QinQ(frames.UDPFrame(1514, 1000, 2002), 100, 200) // 1522 bytes
	start := reconfigure("seg1 added", labConfig(labSeg1), forwarderapi.Reconfigured{Kept: []string{"seg0"}, Attached: []string{"seg1"}})
	crosses("after seg1 was added", 1, qinq)
	t.Logf("seg1 forwarded %v after the request", time.Since(start).Round(time.Millisecond))
	reconfigure("seg1's MTU raised", labConfig(labSeg1+"mtu = 9000\n"), forwarderapi.Reconfigured{Kept: []string{"seg0"}, Detached: []string{"seg1"}, Attached: []string{"seg1"}})
	crosses("after seg1's MTU was raised", 1, frames.UDPFrame(9000+14, 10001, 9))
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Ports {
		if want := map[string]int{"seg0": config.DefaultMTU, "seg1": 9000}[p.Segment]; p.MTU != want {
			t.Errorf("port %s of %s: MTU %d, want %d", p.Name, p.Segment, p.MTU, want)
		}
	}
	// A configuration that does not load changes nothing.
	write("platform = \"generic\"\n[[segment]\n")
	if _, err := d.Reconfigure(context.Background()); err == nil || !strings.Contains(err.Error(), "422") {
		t.Errorf("a broken configuration: %v, want 422", err)
	}
	reconfigure("seg1 removed", labConfig(""), forwarderapi.Reconfigured{Kept: []string{"seg0"}, Detached: []string{"seg1"}})
	if ids := progs(1); ids != [2]uint32{} {
		t.Errorf("seg1's ports after its removal: programs %v, want none", ids)
	}

	s := <-sent
	if s.Frames != frameCount {
		t.Fatalf("the generator sent %d frames, want %d", s.Frames, frameCount)
	}
	var got uint64
	deadline := time.Now().Add(5 * time.Second)
	for got < frameCount && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		got, _, _ = sinks.Count(0, 1)
	}
	t.Logf("seg0: %d of %d frames of the stream crossed during three changes of seg1", got, frameCount)
	if got != frameCount {
		t.Errorf("seg0 lost %d of %d frames while seg1 changed", frameCount-int(got), frameCount)
	}
	if ids := progs(0); ids != seg0 {
		t.Errorf("seg0's programs changed from %v to %v: it was re-attached", seg0, ids)
	}
	// Counted since forwarderd started: the changes reset nothing of
	// seg0's (a sample is taken every 200ms).
	var in uint64
	for deadline := time.Now().Add(3 * time.Second); in < frameCount && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		st, err := d.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Ports {
			if p.Name == "LAN1" {
				in = p.RxPackets
			}
		}
	}
	if in < frameCount {
		t.Errorf("LAN1 counted %d frames in, want at least the stream's %d: its counters were reset", in, frameCount)
	}
	if err := d.Forwarding(context.Background()); err != nil {
		t.Errorf("after the changes: %v", err)
	}

	// A setting of the whole forwarder starts the engine anew.
	reconfigure("mode service", labConfig(labSeg1+"[forwarder]\nmode = \"service\"\n"),
		forwarderapi.Reconfigured{Detached: []string{"seg0"}, Attached: []string{"seg0", "seg1"}, Restarted: true})
	crosses("in service mode", 0, frames.UDPFrame(64, 1, 2))
	crosses("in service mode", 1, frames.UDPFrame(64, 1, 2))
	if st, err := d.Status(context.Background()); err != nil || st.Mode != "service" || st.Flows == nil {
		t.Errorf("after the mode changed: %v, mode %q, flows %v", err, st.Mode, st.Flows)
	}
}

// configFile is a configuration file for forwarderd, and how to write it.
func configFile(t *testing.T) (path string, write func(text string)) {
	path = filepath.Join(t.TempDir(), "ncpos.toml")
	return path, func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// startForwarderdOn runs forwarderd in the lab on the configuration file
// cfg and stops it at the end of the test.
func startForwarderdOn(t *testing.T, l *lab.Lab, cfg string) *lab.Daemon {
	t.Helper()
	d, err := l.StartForwarderdOn(forwarderdBin, t.TempDir(), cfg, "-interval", "200ms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDaemon(t, d) })
	if err := d.WaitHealthy(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	return d
}
