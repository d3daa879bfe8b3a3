package bench

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asavie/xdp"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/internal/xsk"
)

// The generator and the analyzer are AF_XDP sockets (github.com/asavie/xdp)
// on the traffic ends of a segment: the generator writes each frame into
// its UMEM (headers of the flow, the stamp) and hands it to the TX ring,
// paced batch by batch; the analyzer's socket gets every frame arriving at
// the other end from asavie's XSKMAP program and checks its stamp.

// nanotime is the clock of the stamps: the kernel's CLOCK_MONOTONIC,
// which the kernel's generator and analyzer read too (bpf_ktime_get_ns),
// so that an AF_XDP generator's frames can be timed by the kernel's
// analyzer.
func nanotime() uint64 { return uint64(xdptraffic.Monotonic()) }

var xskOptions = xdp.SocketOptions{
	NumFrames:              4096,
	FrameSize:              2048,
	FillRingNumDescs:       2048,
	CompletionRingNumDescs: 2048,
	RxRingNumDescs:         2048,
	TxRingNumDescs:         2048,
}

// analyzerOptions are larger: the analyzer must never be the one that
// drops (the generator sends in batches, the analyzer reads in bursts).
var analyzerOptions = xdp.SocketOptions{
	NumFrames:              16384,
	FrameSize:              2048,
	FillRingNumDescs:       8192,
	CompletionRingNumDescs: 64,
	RxRingNumDescs:         8192,
	TxRingNumDescs:         64,
}

func newXSK(ifindex int, o *xdp.SocketOptions) (*xdp.Socket, error) {
	return xsk.Bind(ifindex, 0, unix.XDP_COPY, o) // veth has no zero-copy
}

// generator sends one stream from an AF_XDP socket: every port that can
// bind one, but slower than the kernel's live frames (kernelGenerator).
type generator struct {
	xsk   *xdp.Socket
	frame FrameSpec
}

// genResult is what one run of a generator did.
type genResult struct {
	sent      uint64 // frames the port transmitted
	elapsed   time.Duration
	txDropped uint64        // made but not transmitted
	behind    time.Duration // the furthest behind its schedule it fell; 0: not known
}

func (g *generator) close() error { return g.xsk.Close() }

// run sends frames of b at spec.RatePPS for spec.Duration (or, with
// spec.Burst > 0, that many as fast as it can) and returns when the
// kernel has completed them all. Every frame carries the time.
//
// A paced run sends round(rate × duration) frames, frame k due k/rate
// after the start, and its elapsed time ends one frame's time after the
// last was queued: a generator on schedule offers the rate asked to the
// frame, whatever the rate, and one that fell behind offers less (it
// gives up once it is a trial's length, or 2 s, late).
func (g *generator) run(b *Builder, trial uint16, spec TrialSpec) (res genResult, err error) {
	pps, burst := spec.RatePPS, spec.Burst
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		// asavie's Transmit panics on an unexpected sendto error.
		if r := recover(); r != nil {
			err = fmt.Errorf("AF_XDP transmit: %v", r)
		}
	}()
	const batch = 64
	total := uint64(burst)
	if burst == 0 {
		if pps <= 0 {
			return res, fmt.Errorf("AF_XDP generator: rate %v frames/s", pps)
		}
		total = uint64(math.Round(pps * spec.Duration.Seconds()))
	}
	dueAt := func(k uint64) time.Duration { return time.Duration(float64(k) / pps * float64(time.Second)) }
	var (
		queued uint64 // handed to the TX ring
		start  = time.Now()
		last   = start // when the last frames were queued
	)
	complete := func() {
		if n := g.xsk.NumCompleted(); n > 0 {
			g.xsk.Complete(n)
			res.sent += uint64(n)
		}
	}
	// A paced run that cannot keep up (or whose port stopped taking
	// frames) ends past its time all the same, having offered less.
	limit := spec.Duration + max(2*time.Second, spec.Duration)
	for queued < total {
		complete()
		due := total - queued
		if burst == 0 {
			elapsed, next := time.Since(start), dueAt(queued)
			if elapsed > limit {
				break
			}
			if elapsed < next {
				// Sleep until the next frame is due, at most 200 µs;
				// spin through the last 50 µs, which a sleep overshoots.
				if wait := next - elapsed; wait > 50*time.Microsecond {
					xdptraffic.Sleep(min(wait-50*time.Microsecond, 200*time.Microsecond))
				}
				continue
			}
			res.behind = max(res.behind, elapsed-next)
			// Frames 0 … pps × elapsed are due by now.
			due = min(max(uint64(pps*elapsed.Seconds())+1, queued+1), total) - queued
		}
		n := min(int(due), batch, g.xsk.NumFreeTxSlots())
		if n == 0 {
			// TX ring full: kick the kernel and wait for completions.
			g.kick()
			continue
		}
		descs := g.xsk.GetDescs(n)
		if len(descs) == 0 {
			g.kick()
			continue
		}
		now := nanotime()
		for i := range descs {
			f := b.Write(g.xsk.GetFrame(descs[i]), trial, uint32(queued)+uint32(i), now)
			descs[i].Len = uint32(len(f))
		}
		queued += uint64(g.xsk.Transmit(descs))
		last = time.Now()
	}
	res.elapsed = last.Sub(start)
	if burst == 0 {
		res.elapsed += dueAt(1)
	}
	// Let the kernel finish what is queued.
	for deadline := time.Now().Add(2 * time.Second); g.xsk.NumTransmitted() > 0 && time.Now().Before(deadline); {
		g.kick()
		complete()
	}
	return res, nil
}

// kick asks the kernel to send what the TX ring holds (copy mode sends in
// sendto) and gives it a moment.
func (g *generator) kick() {
	unix.Syscall6(unix.SYS_SENDTO, uintptr(g.xsk.FD()), 0, 0, uintptr(unix.MSG_DONTWAIT), 0, 0)
	if g.xsk.NumCompleted() == 0 {
		xdptraffic.Sleep(20 * time.Microsecond)
	}
}

// analyzer receives one stream.
type analyzer struct {
	xsk  *xdp.Socket
	prog *xdp.Program
	lk   link.Link

	keepLat atomic.Bool
	mu      sync.Mutex
	tally   tally // this stream's frames of the trial being counted
	lat     []time.Duration
	buf     []time.Duration // the loop's, reused
	stop    atomic.Bool
	done    chan error
}

const maxLatencySamples = 1 << 20

func (a *analyzer) start() {
	a.done = make(chan error, 1)
	go func() { a.done <- a.loop() }()
}

func (a *analyzer) loop() (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a.xsk.Fill(a.xsk.GetDescs(a.xsk.NumFreeFillSlots()))
	fds := []unix.PollFd{{Fd: int32(a.xsk.FD()), Events: unix.POLLIN}}
	for !a.stop.Load() {
		n := a.xsk.NumReceived()
		if n == 0 {
			if _, err := unix.Poll(fds, 10); err != nil && err != unix.EINTR {
				return fmt.Errorf("AF_XDP poll: %w", err)
			}
			continue
		}
		descs := a.xsk.Receive(n)
		keep := a.keepLat.Load()
		now := nanotime()
		lats := a.buf[:0]
		a.mu.Lock()
		for _, d := range descs {
			if st, ok := a.tally.add(a.xsk.GetFrame(d)); ok && keep {
				lats = append(lats, time.Duration(now-st.Time))
			}
		}
		if len(lats) > 0 && len(a.lat) < maxLatencySamples {
			a.lat = append(a.lat, lats...)
		}
		a.mu.Unlock()
		// Give the frames just read back to the kernel (asavie's
		// GetDescs scans the whole UMEM).
		for i := range descs {
			descs[i].Addr &^= uint64(analyzerOptions.FrameSize - 1)
		}
		a.xsk.Fill(descs)
		a.buf = lats
	}
	return nil
}

// reset starts counting trial.
func (a *analyzer) reset(trial uint16, latency bool) error {
	a.keepLat.Store(latency)
	a.mu.Lock()
	a.tally.reset(trial)
	a.lat = nil
	a.mu.Unlock()
	return nil
}

func (a *analyzer) received() (arrivals, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tally.arrivals, nil
}

// drops is what the analyzer's socket could not take (its RX ring full,
// no fill descriptor): frames lost by the tester, not the device.
func (a *analyzer) drops() uint64 {
	st, err := a.xsk.Stats()
	if err != nil {
		return 0
	}
	return st.KernelStats.Rx_dropped + st.KernelStats.Rx_ring_full
}

func (a *analyzer) latency() ([]time.Duration, *xdptraffic.Histogram) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lat, nil
}

func (a *analyzer) close() error {
	a.stop.Store(true)
	var err error
	if a.done != nil {
		err = <-a.done
	}
	if a.lk != nil {
		a.lk.Close()
	}
	if a.prog != nil {
		a.prog.Close()
	}
	if a.xsk != nil {
		a.xsk.Close()
	}
	return err
}
