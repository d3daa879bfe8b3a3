package lab

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"

	"github.com/ncpos/ncpos/lab/bpf"
)

// Generator transmits frames from a traffic end at the rate one core can:
// BPF_PROG_RUN in live-frame mode runs the gen program on a frame, which
// returns XDP_TX, so the kernel sends it out of the veth without any socket
// or skb. (Debian's xdp-trafficgen does the same but does not load on
// recent kernels.)
type Generator struct {
	Sent    atomic.Uint64 // frames sent so far, updated after each batch
	ns      *Netns
	ifindex int
	prog    *ebpf.Program
	seq     *ebpf.Map
	spin    uint32
}

// bpfFTestXDPLiveFrames is BPF_F_TEST_XDP_LIVE_FRAMES.
const bpfFTestXDPLiveFrames = 1 << 1

// Generator prepares a generator on a traffic end. With flows > 1 it
// rewrites the UDP source port of each frame (at byte 34 of an untagged
// IPv4 frame) to cycle over that many values, so that service mode sees
// that many distinct 5-tuples.
func (l *Lab) Generator(seg, side int, flows int) (*Generator, error) {
	return l.ThrottledGenerator(seg, side, flows, 0)
}

// ThrottledGenerator is a Generator slowed by spin empty loop rounds per
// frame (bpf_loop), for offering a given load smoothly.
func (l *Lab) ThrottledGenerator(seg, side int, flows int, spin uint32) (*Generator, error) {
	spec, err := bpf.LoadLab()
	if err != nil {
		return nil, fmt.Errorf("lab: loading BPF object: %w", err)
	}
	seq, err := ebpf.NewMap(spec.Maps[bpf.LabMapGenSeq])
	if err != nil {
		return nil, fmt.Errorf("lab: generator state: %w", err)
	}
	prog, err := loadProgram(spec, bpf.LabProgGen, map[string]*ebpf.Map{bpf.LabMapGenSeq: seq},
		map[string]any{bpf.LabVarFlows: uint32(max(flows, 0)), bpf.LabVarSpin: spin})
	if err != nil {
		seq.Close()
		return nil, err
	}
	s := l.Segments[seg]
	return &Generator{ns: s.Hosts[side], ifindex: s.HostIndex[side], prog: prog, seq: seq, spin: spin}, nil
}

// xdpMD is the XDP context BPF_PROG_RUN takes (struct xdp_md).
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// Send transmits frame n times (n ≥ 1) and returns when done.
func (g *Generator) Send(frame []byte, n uint32) error {
	return g.ns.Do(func() error { return g.run(frame, n) })
}

func (g *Generator) run(frame []byte, n uint32) error {
	ctx := xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(g.ifindex)}
	_, err := g.prog.Run(&ebpf.RunOptions{
		Data: frame, Context: ctx, Repeat: n, Flags: bpfFTestXDPLiveFrames, BatchSize: 64,
	})
	if err != nil {
		return fmt.Errorf("lab: generating: %w", err)
	}
	return nil
}

// Run transmits frame from CPU cpu as fast as that core can, until ctx is
// done or d has passed, and returns how many frames it offered. With
// pps > 0 it paces itself to about that rate instead.
//
// Each BPF_PROG_RUN call ends with a wait of some 25 ms in the kernel
// (tearing down its page pool waits for an RCU grace period) during which
// nothing is sent. So four threads on the same core take turns: while some
// wait, another sends, and the core never idles. Sent counts as they go.
func (g *Generator) Run(ctx context.Context, frame []byte, d time.Duration, pps float64, cpu int) (uint64, error) {
	const threads = 4
	chunk := uint32(1 << 16)
	if g.spin > 0 {
		// A throttled generator is slow: smaller calls keep Sent,
		// and so the offered rate of a window, current.
		chunk = 1 << 13
	}
	if pps > 0 {
		chunk = uint32(max(1<<14, pps/threads*0.03))
	}
	var (
		sent = &g.Sent
		wg   sync.WaitGroup
		errs = make([]error, threads)
	)
	sent0 := sent.Load()
	start := time.Now()
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set, old unix.CPUSet
			if err := unix.SchedGetaffinity(0, &old); err != nil {
				errs[t] = err
				return
			}
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs[t] = fmt.Errorf("lab: generator on CPU %d: %w", cpu, err)
				return
			}
			defer unix.SchedSetaffinity(0, &old)
			errs[t] = g.ns.Do(func() error {
				var mine uint64
				for time.Since(start) < d && ctx.Err() == nil {
					if err := g.run(frame, chunk); err != nil {
						return err
					}
					mine += uint64(chunk)
					sent.Add(uint64(chunk))
					if pps > 0 {
						due := start.Add(time.Duration(float64(mine) / (pps / threads) * float64(time.Second)))
						if wait := time.Until(due); wait > 0 {
							time.Sleep(wait)
						}
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	return sent.Load() - sent0, errors.Join(errs...)
}

// Close unloads the generator.
func (g *Generator) Close() error {
	return errors.Join(g.prog.Close(), g.seq.Close())
}
