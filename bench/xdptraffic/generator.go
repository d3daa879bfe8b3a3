// Package xdptraffic is the bench's traffic in the kernel: a generator
// that BPF_PROG_RUN runs in live-frame mode (BPF_F_TEST_XDP_LIVE_FRAMES,
// Linux 5.18 or later), transmitting out of a test port without any socket
// or copy per frame, and an analyzer, an XDP program on the receiving test
// port that counts each stream's frames, sequence gaps, reordering,
// duplicates and latency in per-CPU maps. Both stamp and read the bench's
// frame stamp (bench/frame.go) and use the kernel's monotonic clock, so
// latencies need no clock shared with user space. On a kernel that does
// not run live frames (ErrNoLiveFrames) the generator sends the same
// frames from an AF_XDP socket.
package xdptraffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// liveFrames is BPF_F_TEST_XDP_LIVE_FRAMES.
const liveFrames = 1 << 1

// CatchUp is the longest lag behind its schedule a paced generator
// catches up by sending back to back, a scheduler's time slice; a longer
// one moves the schedule on (Sent.Slipped). It is short because the
// catch-up is a burst at the port's line rate, which a device measured
// below its line rate would be right to drop.
const CatchUp = 2 * time.Millisecond

// stampOffset is where the stamp starts: the UDP payload of an untagged
// IPv4 frame, as the bench builds them.
const stampOffset = 42

// Generator sends one stream out of a port: with the program in
// live-frame mode, or where the kernel does not run it so, from an AF_XDP
// socket (Engine).
type Generator struct {
	prog    *ebpf.Program
	state   *ebpf.Map
	sock    *socketSender // instead of prog and state
	why     string        // why the socket sends
	ifindex int
	do      func(func() error) error
	cpu     int
}

// GeneratorOptions say where a generator sends.
type GeneratorOptions struct {
	Ifindex int // the test port
	// Flows is how many UDP source ports (from SportBase on) the frames
	// cycle over, so that a forwarder's flow handling has work; 1 when 0.
	Flows int
	// SportBase is the first of the flows' source ports; 1024 when 0.
	SportBase uint16
	// Do runs fn in the port's network namespace; nil: this one.
	Do func(fn func() error) error
	// CPU is the core the generator's threads run on; -1: any.
	CPU int
	// Socket sends from an AF_XDP socket even where the kernel runs
	// live frames, as it does where the kernel does not.
	Socket bool
}

// NewGenerator loads the generator.
func NewGenerator(o GeneratorOptions) (*Generator, error) {
	if o.Ifindex <= 0 {
		return nil, fmt.Errorf("generator: no port (ifindex %d)", o.Ifindex)
	}
	flows := max(o.Flows, 1)
	if flows > 1<<15 {
		return nil, fmt.Errorf("generator: %d flows, at most %d", flows, 1<<15)
	}
	do := o.Do
	if do == nil {
		do = func(fn func() error) error { return fn() }
	}
	if why := LiveFrames(); o.Socket || why != nil {
		sock, err := newSocketSender(o, flows)
		if err != nil {
			if why != nil {
				return nil, fmt.Errorf("generator: %w; %w", why, err)
			}
			return nil, fmt.Errorf("generator: %w", err)
		}
		g := &Generator{sock: sock, why: "asked for", ifindex: o.Ifindex, do: do, cpu: o.CPU}
		if why != nil {
			g.why = why.Error()
		}
		return g, nil
	}
	spec, err := LoadTraffic()
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	if err := spec.Variables["flows"].Set(uint32(flows)); err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	if o.SportBase != 0 {
		if err := spec.Variables["sport_base"].Set(o.SportBase); err != nil {
			return nil, fmt.Errorf("generator: %w", err)
		}
	}
	if err := spec.Variables["catch_up_ns"].Set(uint64(CatchUp)); err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	if o.CPU >= 0 {
		if err := spec.Variables["one_cpu"].Set(uint32(1)); err != nil {
			return nil, fmt.Errorf("generator: %w", err)
		}
	}
	var objs struct {
		Gen   *ebpf.Program `ebpf:"gen"`
		State *ebpf.Map     `ebpf:"generator"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("generator: loading: %w", err)
	}
	return &Generator{prog: objs.Gen, state: objs.State, ifindex: o.Ifindex, do: do, cpu: o.CPU}, nil
}

// Close unloads the generator.
func (g *Generator) Close() error {
	if g.sock != nil {
		return g.sock.close()
	}
	return errors.Join(g.prog.Close(), g.state.Close())
}

// Engine is how the generator sends, EngineLiveFrames or EngineSocket,
// and for a socket why.
func (g *Generator) Engine() (engine, why string) {
	if g.sock != nil {
		return EngineSocket, g.why
	}
	return EngineLiveFrames, ""
}

// Send is one run of a generator.
type Send struct {
	// Frame is the first frame of the stream, stamped with its trial
	// and stream; the generator writes sequence number and time into
	// each copy it sends.
	Frame   []byte
	Frames  uint64  // how many to send; 0 with For: no limit
	RatePPS float64 // paced to this rate; 0: as fast as the core can
	// For ends the run after this long, whatever is left to send; 0:
	// when Frames are out. A flat-out run of the program that For ends
	// reads the clock only at its first frame, so its Sent has no span
	// (OfferedPPS 0): time it with Progress.
	For time.Duration
	// Timed writes the kernel's time into every frame, for the
	// analyzer's latency; without it the clock is read only when the
	// schedule needs it, which leaves the core more time for frames.
	Timed bool
}

// Sent is what a run transmitted, as the generator counted it.
type Sent struct {
	Frames      uint64
	First, Last time.Duration // on the kernel's monotonic clock
	// Waits are the times a paced generator found fewer frames due than
	// it could send: the program's runs that found none due, the
	// socket's batches the schedule cut short. A paced generator with
	// none was not fast enough to keep its schedule.
	Waits uint64
	// Slipped is how far a paced generator fell behind its schedule in
	// all (moved on rather than caught up in a burst), in Slips times.
	Slipped time.Duration
	Slips   uint64
	// MaxLag is the furthest behind its schedule a paced generator
	// found itself at a reading of the clock, whether it caught up or
	// moved the schedule on. A generator that cannot keep the rate
	// shows about CatchUp, as it moves on at each reading; a stall
	// shows its own length.
	MaxLag time.Duration
}

// Elapsed is from the first frame to the last.
func (s Sent) Elapsed() time.Duration { return s.Last - s.First }

// OfferedPPS is the rate the frames went at.
func (s Sent) OfferedPPS() float64 {
	if s.Frames < 2 || s.Last <= s.First {
		return 0
	}
	return float64(s.Frames-1) / (s.Last - s.First).Seconds()
}

// Monotonic is the kernel's monotonic clock, which bpf_ktime_get_ns reads.
func Monotonic() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// threads take turns on the generator's core: each BPF_PROG_RUN call ends
// with a wait of some 25 ms in the kernel (its page pool waits for an RCU
// grace period) during which that thread sends nothing, so others send
// meanwhile. runsPerCall is how many program runs one call asks for, on
// average; a paced program's runs include those that only wait, which are
// quick, so a paced call asks for more: some 50 ms of them on average.
// Each call asks for a random number of runs, from half to one and a half
// times that: calls of one length, started together and sharing the core
// fairly, end together, and all four threads would be in their waits at
// once, the generator stalled for as long.
const (
	threads          = 4
	runsPerCall      = 1 << 17
	runsPerPacedCall = 1 << 19
)

// Run sends s and returns when all its frames are out, ctx is done, s.For
// has passed, or the run has taken twice as long as its rate says (and
// 2 s more); then Sent has fewer frames than asked for.
func (g *Generator) Run(ctx context.Context, s Send) (Sent, error) {
	if len(s.Frame) < stampOffset+18 {
		return Sent{}, fmt.Errorf("generator: a frame of %d bytes has no room for the stamp", len(s.Frame))
	}
	if s.Frames == 0 && s.For <= 0 {
		return Sent{}, errors.New("generator: no frames to send")
	}
	var interval uint64
	budget := 2 * time.Second
	if s.RatePPS > 0 {
		interval = uint64(1e12 / s.RatePPS)
		budget += 2 * time.Duration(float64(s.Frames)/s.RatePPS*float64(time.Second))
	} else if g.sock != nil {
		budget += time.Duration(s.Frames) * 4 * time.Microsecond // a socket on a loaded core
	} else {
		budget += time.Duration(s.Frames) * time.Microsecond // 1 Mpps, the slowest port worth benching
	}
	if s.For > 0 {
		budget = s.For
		if s.Frames == 0 {
			s.Frames = math.MaxUint64
		}
	}
	deadline := time.Now().Add(budget)
	if g.sock != nil {
		sent, err := g.sock.run(ctx, s, deadline, g.cpu)
		if err != nil {
			return sent, err
		}
		return sent, ctx.Err()
	}
	// Frame 0 is due once the threads have had time to start.
	st := TrafficGenState{StartNs: uint64(Monotonic() + 5*time.Millisecond), IntervalPs: interval, Limit: s.Frames}
	if s.Timed {
		st.StampTime = 1
	}
	if err := g.state.Put(uint32(0), &st); err != nil {
		return Sent{}, fmt.Errorf("generator: %w", err)
	}
	var (
		wg   sync.WaitGroup
		errs = make([]error, threads)
	)
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.loop(ctx, s.Frame, s.Frames, s.RatePPS > 0, deadline)
		}()
	}
	wg.Wait()
	if err := g.state.Lookup(uint32(0), &st); err != nil {
		return Sent{}, fmt.Errorf("generator: %w", err)
	}
	sent := Sent{Frames: min(st.Next, s.Frames), First: time.Duration(st.FirstNs), Last: time.Duration(st.LastNs),
		Waits: st.Early, Slipped: time.Duration(st.SlippedNs), Slips: st.Slips, MaxLag: time.Duration(st.MaxLagNs)}
	if err := errors.Join(errs...); err != nil {
		return sent, err
	}
	return sent, ctx.Err()
}

// Progress returns how many frames the run under way (or the last one)
// has sent so far.
func (g *Generator) Progress() (uint64, error) {
	if g.sock != nil {
		return g.sock.queued.Load(), nil
	}
	var st TrafficGenState
	if err := g.state.Lookup(uint32(0), &st); err != nil {
		return 0, fmt.Errorf("generator: %w", err)
	}
	return st.Next, nil
}

// loop calls the program until the run's frames are out.
func (g *Generator) loop(ctx context.Context, frame []byte, frames uint64, paced bool, deadline time.Time) error {
	runs := uint32(runsPerCall)
	if paced {
		runs = runsPerPacedCall
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if g.cpu >= 0 {
		var set, old unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return err
		}
		set.Set(g.cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("generator on CPU %d: %w", g.cpu, err)
		}
		defer unix.SchedSetaffinity(0, &old)
	}
	return g.do(func() error {
		md := xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(g.ifindex)}
		for ctx.Err() == nil && time.Now().Before(deadline) {
			var st TrafficGenState
			if err := g.state.Lookup(uint32(0), &st); err != nil {
				return fmt.Errorf("generator: %w", err)
			}
			if st.Next >= frames {
				return nil
			}
			n := runs/2 + rand.Uint32N(runs)
			_, err := g.prog.Run(&ebpf.RunOptions{Data: frame, Context: md, Repeat: n, Flags: liveFrames, BatchSize: 64})
			if err != nil {
				return fmt.Errorf("generator: %w", err)
			}
		}
		return nil
	})
}

// xdpMD is the XDP context BPF_PROG_RUN takes (struct xdp_md).
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}
