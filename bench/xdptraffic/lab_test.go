package xdptraffic_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/lab"
)

// path is a lab segment's first traffic end sending into its port, where
// the analyzer sits: the generator-to-drop path of the lab.
type path struct {
	l        *lab.Lab
	gen      *xdptraffic.Generator
	an       *xdptraffic.Analyzer
	frame    []byte
	port     string
	genIface string
}

func newPath(t *testing.T, size int, flows int) *path {
	t.Helper()
	return newPathOpts(t, size, flows, false)
}

// newPathOpts is newPath with the generator on an AF_XDP socket (socket)
// whether or not the kernel runs live frames.
func newPathOpts(t *testing.T, size int, flows int, socket bool) *path {
	t.Helper()
	testenv.NeedRoot(t, testenv.Lab, "the lab")
	l, err := lab.New(lab.Config{ID: strconv.FormatInt(int64(rand.IntN(36*36*36*36)), 36), Segments: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("cleaning up the lab: %v", err)
		}
	})
	s := l.Segments[0]
	p := &path{l: l, port: s.Ports[0], genIface: s.HostIfs[0]}
	if p.gen, err = xdptraffic.NewGenerator(xdptraffic.GeneratorOptions{Ifindex: s.HostIndex[0], Flows: flows, Do: s.Hosts[0].Do, CPU: 0, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.gen.Close() })
	pl, err := l.FW.Link(s.Ports[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.an, err = xdptraffic.NewAnalyzer(pl.Attrs().Index, l.FW.Do); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.an.Close() })
	b, err := bench.NewBuilder(bench.FrameSpec{Size: size, Stream: 3})
	if err != nil {
		t.Fatal(err)
	}
	p.frame = b.Write(make([]byte, b.Len()), 7, 0, 0)
	return p
}

// rx is the port's kernel count of frames received.
func (p *path) rx(t *testing.T) uint64 {
	t.Helper()
	l, err := p.l.FW.Link(p.port)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Statistics.RxPackets
}

// tx is the sending traffic end's kernel count of frames transmitted:
// what the generator counted, less what the veth could not hand over.
func (p *path) tx(t *testing.T) uint64 {
	t.Helper()
	l, err := p.l.Segments[0].Hosts[0].Link(p.genIface)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Statistics.TxPackets
}

// trial sends one run and checks the counts against the kernel's: the
// analyzer's with the port's rx_packets, the generator's with the
// sender's tx_packets.
func (p *path) trial(t *testing.T, trial uint16, frames uint64, pps float64, timed bool) (xdptraffic.Sent, xdptraffic.Stream) {
	t.Helper()
	if err := p.an.Reset(trial); err != nil {
		t.Fatal(err)
	}
	bench.PutStamp(p.frame, bench.Stamp{Trial: trial, Stream: 3})
	rx0, tx0 := p.rx(t), p.tx(t)
	sent, err := p.gen.Run(context.Background(), xdptraffic.Send{Frame: p.frame, Frames: frames, RatePPS: pps, Timed: timed})
	if err != nil {
		t.Fatal(err)
	}
	streams, other, passed, err := p.an.Streams()
	if err != nil {
		t.Fatal(err)
	}
	st := streams[3]
	rx, tx := p.rx(t)-rx0, p.tx(t)-tx0
	t.Logf("%.0f pps asked: %d frames sent at %.3f Mpps (%d waits, %d slips of %v in all, at most %v behind), sender tx_packets %d, analyzer %d, port rx_packets %d; lost %d, reordered %d, duplicated %d; latency min %v mean %v p99 %v max %v",
		pps, sent.Frames, sent.OfferedPPS()/1e6, sent.Waits, sent.Slips, sent.Slipped, sent.MaxLag, tx, st.Frames, rx, st.Lost, st.Reordered, st.Duplicated,
		st.Latency.Min, st.Latency.Mean(), st.Latency.Quantile(0.99), st.Latency.Max)
	if sent.Frames != frames {
		t.Errorf("sent %d frames, want %d", sent.Frames, frames)
	}
	// Only a paced run has a schedule to fall behind, and it moves the
	// schedule on only past the catch-up window.
	if pps == 0 && (sent.MaxLag != 0 || sent.Slips != 0) {
		t.Errorf("flat out: %v behind, %d slips", sent.MaxLag, sent.Slips)
	}
	if pps > 0 && sent.MaxLag == 0 {
		t.Errorf("paced: never behind its schedule at a reading of the clock, not even by a nanosecond")
	}
	if sent.Slips > 0 && sent.MaxLag < xdptraffic.CatchUp {
		t.Errorf("%d slips, yet at most %v behind, within the %v caught up", sent.Slips, sent.MaxLag, xdptraffic.CatchUp)
	}
	// Every frame the port took went through the analyzer: the test
	// frames, and any other (a neighbour solicitation) it passed on.
	if st.Frames+other+passed != rx {
		t.Errorf("the analyzer counted %d test frames and %d others, the port's kernel %d", st.Frames, other+passed, rx)
	}
	if tx > sent.Frames || st.Frames > tx {
		t.Errorf("the generator counted %d frames, the sender's kernel %d, the analyzer %d", sent.Frames, tx, st.Frames)
	}
	if other != 0 || st.Duplicated != 0 {
		t.Errorf("%d frames of other trials, %d duplicates", other, st.Duplicated)
	}
	if len(streams) != 1 {
		t.Errorf("frames of %d streams, want only stream 3", len(streams))
	}
	// A timed run's latency is of every frame; an untimed one's frames
	// carry no time, and have none.
	if want := map[bool]uint64{true: st.Frames}[timed]; st.Latency.Count != want {
		t.Errorf("timed %v: latency of %d frames, want %d", timed, st.Latency.Count, want)
	}
	if timed && st.Frames > 0 && (st.Latency.Min <= 0 || st.Latency.Max < st.Latency.Min) {
		t.Errorf("latency %+v", st.Latency)
	}
	return sent, st
}

// TestGeneratorToAnalyzer sends paced and unpaced trials of 64-byte frames
// through a lab veth and checks every count against the kernel's: with
// the kernel's live frames where it runs them, and from an AF_XDP socket.
func TestGeneratorToAnalyzer(t *testing.T) {
	for _, socket := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "socket"}[socket], func(t *testing.T) {
			p := newPathOpts(t, 64, 16, socket)
			engine, why := p.gen.Engine()
			t.Logf("generator: %s %s", engine, why)
			if live := xdptraffic.LiveFrames() == nil; (engine == xdptraffic.EngineLiveFrames) != (live && !socket) {
				t.Errorf("engine %s (%s), the kernel running live frames %v, a socket asked for %v", engine, why, live, socket)
			}
			generatorToAnalyzer(t, p)
			if socket {
				// Longer than the socket's frames: refused, not cut.
				if _, err := p.gen.Run(context.Background(), xdptraffic.Send{Frame: make([]byte, 3000), Frames: 1}); err == nil {
					t.Errorf("a frame of 3000 bytes sent from the socket")
				}
			}
		})
	}
}

func generatorToAnalyzer(t *testing.T, p *path) {
	sent, st := p.trial(t, 1, 200_000, 200_000, true)
	if st.Frames == sent.Frames && st.Lost != 0 {
		t.Errorf("no frame was lost, yet %d gaps counted", st.Lost)
	}
	if sent.Waits == 0 {
		t.Errorf("a run paced at 0.2 Mpps never waited for a frame's time")
	}
	// Never ahead of its schedule (a late first frame followed by a
	// catch-up may raise the average a little); how far it falls behind
	// on a busy machine is a figure, not a check.
	if got := sent.OfferedPPS(); got > 220_000 {
		t.Errorf("paced to 0.2 Mpps, offered %.0f pps", got)
	}
	p.trial(t, 2, 1_000_000, 0, true)
	// Untimed, paced: the clock is read only when the schedule needs it;
	// the schedule still holds.
	sent, _ = p.trial(t, 3, 300_000, 300_000, false)
	if sent.Waits == 0 {
		t.Errorf("an untimed run paced at 0.3 Mpps never waited for a frame's time")
	}
	if got := sent.OfferedPPS(); got > 330_000 {
		t.Errorf("untimed, paced to 0.3 Mpps, offered %.0f pps", got)
	}
	p.trial(t, 4, 1_000_000, 0, false)
}

// TestAnalyzerSequence sends exact frames (AF_PACKET) into the analyzer:
// a gap, a frame overtaken, a duplicate, a frame of another trial and one
// that is no test frame, each counted where it belongs.
func TestAnalyzerSequence(t *testing.T) {
	p := newPath(t, 128, 1)
	snd, err := p.l.Sender(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	if err := p.an.Reset(9); err != nil {
		t.Fatal(err)
	}
	now := uint64(xdptraffic.Monotonic())
	for _, seq := range []uint32{0, 1, 2, 4, 3, 3, 6} {
		bench.PutStamp(p.frame, bench.Stamp{Trial: 9, Seq: seq, Time: now, Stream: 3})
		if err := snd.Send(p.frame); err != nil {
			t.Fatal(err)
		}
	}
	bench.PutStamp(p.frame, bench.Stamp{Trial: 8, Seq: 7, Time: now, Stream: 3})
	if err := snd.Send(p.frame); err != nil {
		t.Fatal(err)
	}
	other := append([]byte(nil), p.frame...)
	other[bench.StampOffset] = 0 // no magic
	if err := snd.Send(other); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		streams, late, passed, err := p.an.Streams()
		if err != nil {
			t.Fatal(err)
		}
		st := streams[3]
		if st.Frames == 7 && late == 1 && passed >= 1 {
			if st.Lost != 1 || st.Reordered != 1 || st.Duplicated != 1 || st.Bytes != 7*124 {
				t.Errorf("seqs 0 1 2 4 3 3 6: %+v, want 1 lost (5), 1 reordered (3), 1 duplicated (3), 7 frames of 124 bytes", st)
			}
			if st.Latency.Count != 7 || st.Latency.Min <= 0 || st.Latency.Max < st.Latency.Min {
				t.Errorf("latency %+v", st.Latency)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %+v, %d of another trial, %d passed", st, late, passed)
		}
	}
}
