package bench

import (
	"fmt"
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

// The AF_XDP analyzer is a socket (github.com/asavie/xdp) on the
// receiving traffic end of a segment: it gets every frame arriving there
// from asavie's XSKMAP program and checks its stamp. The AF_XDP generator
// is xdptraffic's socket sender (trafficGenerator).

// nanotime is the clock of the stamps: the kernel's CLOCK_MONOTONIC,
// which the generators and the kernel's analyzer read too
// (bpf_ktime_get_ns), so that the socket analyzer can time their frames.
func nanotime() uint64 { return uint64(xdptraffic.Monotonic()) }

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
