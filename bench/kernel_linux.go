package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/ncpos/ncpos/bench/xdptraffic"
)

// Engines of a stream's traffic, as the report names them.
const (
	EngineKernel = "kernel live frames" // BPF_PROG_RUN generator, XDP analyzer
	EngineAFXDP  = "AF_XDP"             // sockets in copy mode
	// EngineAFXDPGen is an AF_XDP generator whose frames the kernel's
	// XDP analyzer counts: a port that cannot transmit XDP frames can
	// still run an XDP program (generic XDP, at worst).
	EngineAFXDPGen = "AF_XDP generator, kernel analyzer"
)

// trafficGenerator sends a stream with xdptraffic's generator: the
// kernel's live frames, or where they cannot go an AF_XDP socket; tx
// reads the sending port's tx_packets.
type trafficGenerator struct {
	g  *xdptraffic.Generator
	tx func() (uint64, error)
}

func (k *trafficGenerator) run(b *Builder, trial uint16, spec TrialSpec) (genResult, error) {
	frame := b.Write(make([]byte, b.Len()), trial, 0, 0)
	// A burst goes at the rate asked too: the line rate, which a real
	// port cannot exceed and a veth would.
	send := xdptraffic.Send{Frame: frame, Frames: uint64(spec.Burst), RatePPS: spec.RatePPS, Timed: spec.Latency}
	if spec.Burst == 0 {
		send.Frames = max(uint64(math.Round(spec.RatePPS*spec.Duration.Seconds())), 1)
	}
	tx0, err := k.tx()
	if err != nil {
		return genResult{}, err
	}
	s, err := k.g.Run(context.Background(), send)
	if err != nil {
		return genResult{}, err
	}
	// The port may not have taken every frame the program passed it
	// (a full transmit ring): what it sent is what counts.
	tx, err := waitSent(k.tx, tx0, s.Frames, 100*time.Millisecond, time.Millisecond)
	if err != nil {
		return genResult{}, err
	}
	// From the first frame to one frame's time after the last: on
	// schedule, the rate asked.
	elapsed := s.Elapsed()
	if spec.Burst == 0 && spec.RatePPS > 0 {
		elapsed += time.Duration(float64(time.Second) / spec.RatePPS)
	}
	res := genResult{sent: min(s.Frames, tx), elapsed: elapsed, behind: s.MaxLag}
	res.txDropped = s.Frames - res.sent
	return res, nil
}

func (k *trafficGenerator) close() error { return k.g.Close() }

// waitSent reads a port's transmit counter until it has moved by want
// since from, or within has passed, and returns how far it moved: a
// driver may count its transmits later than it takes them (a veth counts
// them when its peer's NAPI has run).
func waitSent(read func() (uint64, error), from, want uint64, within, every time.Duration) (uint64, error) {
	deadline := time.Now().Add(within)
	for {
		tx, err := read()
		if err != nil {
			return 0, err
		}
		if tx-from >= want || !time.Now().Before(deadline) {
			return tx - from, nil
		}
		time.Sleep(every)
	}
}

// kernelAnalyzer reads one stream of an XDP analyzer.
type kernelAnalyzer struct {
	a       *xdptraffic.Analyzer
	stream  uint16
	keepLat bool
}

func (k *kernelAnalyzer) reset(trial uint16, latency bool) error {
	k.keepLat = latency
	return k.a.Reset(trial)
}

func (k *kernelAnalyzer) stats() (xdptraffic.Stream, error) {
	streams, _, _, err := k.a.Streams()
	return streams[k.stream], err
}

func (k *kernelAnalyzer) received() (arrivals, error) {
	streams, other, notTest, err := k.a.Streams()
	if err != nil {
		return arrivals{}, err
	}
	return kernelArrivals(streams, other, notTest, k.stream), nil
}

// drops: the analyzer is the port's XDP program, it cannot fall behind.
func (k *kernelAnalyzer) drops() uint64 { return 0 }

func (k *kernelAnalyzer) latency() ([]time.Duration, *xdptraffic.Histogram) {
	st, err := k.stats()
	if err != nil || !k.keepLat {
		return nil, nil
	}
	return nil, &st.Latency
}

func (k *kernelAnalyzer) close() error { return k.a.Close() }

// newKernelStream sets up the kernel's generator and analyzer for s.
func newKernelStream(s *portStream) error {
	an, err := xdptraffic.NewAnalyzer(s.rxIndex, s.Receiver.do)
	if err != nil {
		return err
	}
	// One core per stream: the frames' way through the kernel (the
	// receiving veth's NAPI, in the lab) runs on the sender's core too,
	// and a stream spread over several would feed one queue from each.
	// The generator decides how it sends: live frames, or a socket
	// where the kernel refuses them, whose frames the kernel's analyzer
	// counts as well.
	gen, err := xdptraffic.NewGenerator(xdptraffic.GeneratorOptions{Ifindex: s.txIndex, Flows: s.spec.Flows, Do: s.Sender.do,
		CPU: int(s.spec.Stream) % runtime.NumCPU()})
	if err != nil {
		an.Close()
		return err
	}
	s.gen = &trafficGenerator{g: gen, tx: s.txPackets}
	s.an = &kernelAnalyzer{a: an, stream: s.spec.Stream}
	s.Engine = EngineKernel
	if engine, why := gen.Engine(); engine != xdptraffic.EngineLiveFrames {
		s.Engine, s.Why = EngineAFXDPGen, why
	}
	return nil
}

// probe checks that the sending port's driver transmits the kernel
// generator's XDP frames: probe frames must show in its tx_packets
// (e1000e, for one, sends them only while a native program is attached
// to it, with ncpos's kernel, and drops them otherwise). Where they do
// not, an AF_XDP socket sends the stream instead, and the kernel's
// analyzer still counts it.
func (s *portStream) probe() error {
	k, ok := s.gen.(*trafficGenerator)
	if !ok {
		return nil
	}
	if engine, _ := k.g.Engine(); engine != xdptraffic.EngineLiveFrames {
		return nil // a socket's frames go the stack's way
	}
	spec := s.spec
	spec.Size = 64
	b, err := NewBuilder(spec)
	if err != nil {
		return err
	}
	tx0, err := s.txPackets()
	if err != nil {
		return err
	}
	const probe = 16
	// Trial 0: the bench numbers its trials from 1.
	sent, err := k.g.Run(context.Background(), xdptraffic.Send{Frame: b.Write(make([]byte, b.Len()), 0, 0, 0), Frames: probe})
	if err != nil {
		return err
	}
	// Up to half a second on a loaded machine; not at all when the
	// program did not pass the port every probe frame.
	within := 500 * time.Millisecond
	if sent.Frames < probe {
		within = 0
	}
	tx, err := waitSent(s.txPackets, tx0, probe, within, 10*time.Millisecond)
	if err != nil {
		return err
	}
	if sent.Frames >= probe && tx >= probe {
		return nil
	}
	s.gen.close()
	s.gen = nil
	s.Why = fmt.Sprintf("%s's driver sent %d of %d XDP frames", s.Sender.Ifname, tx, sent.Frames)
	if err := newAFXDPGenerator(s); err != nil {
		return err
	}
	s.Engine = EngineAFXDPGen
	return nil
}
