package forwarder

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asavie/xdp"
	"golang.org/x/sys/unix"
)

// afxdpEnd is one side of a worker: a port's socket for one queue and the
// counters the worker keeps for frames that entered there.
type afxdpEnd struct {
	port     *port
	xsk      *xdp.Socket
	counters goCounters
}

// goCounters are portCounters written by one worker and read by the
// sampler: the worker adds a batch at a time under the lock.
type goCounters struct {
	mu sync.Mutex
	c  portCounters
}

func (g *goCounters) add(b *portCounters) {
	g.mu.Lock()
	g.c.merge(b)
	g.mu.Unlock()
}

func (g *goCounters) snapshot() portCounters {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.c
}

// afxdpWorker serves one queue of a segment: frames received on either
// end's socket are copied to the other end's and sent, a batch at a time.
type afxdpWorker struct {
	ends   [2]afxdpEnd
	cpu    int
	stop   *atomic.Bool
	flows  *flowShard // service mode
	clock  func() time.Duration
	beat   atomic.Int64 // unix nanoseconds of the last loop
	failed atomic.Value // error
}

// pollTimeout bounds how long an idle worker sleeps, so that it notices
// stop and keeps its heartbeat.
const pollTimeout = 100 // ms

func (w *afxdpWorker) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		// A panic anywhere else would take forwarderd down with it:
		// report it through health instead, so that bypassd acts.
		if r := recover(); r != nil {
			w.failed.Store(fmt.Errorf("afxdp worker %s/%s: %v", w.ends[0].port.ifname, w.ends[1].port.ifname, r))
		}
	}()
	if w.cpu >= 0 {
		var set unix.CPUSet
		set.Set(w.cpu)
		// Best effort: a CPU taken offline must not stop forwarding.
		_ = unix.SchedSetaffinity(0, &set)
	}
	fds := []unix.PollFd{{Fd: int32(w.ends[0].xsk.FD())}, {Fd: int32(w.ends[1].xsk.FD())}}
	var batch [2]portCounters
	for !w.stop.Load() {
		w.beat.Store(time.Now().UnixNano())
		for i := range w.ends {
			// Frames the kernel has sent go back to the pool even when
			// nothing flows towards this end any more.
			if n := w.ends[i].xsk.NumCompleted(); n > 0 {
				w.ends[i].xsk.Complete(n)
			}
			refill(w.ends[i].xsk)
			fds[i].Events = unix.POLLIN
			if w.ends[i].xsk.NumTransmitted() > 0 {
				fds[i].Events |= unix.POLLOUT
			}
		}
		if w.ends[0].xsk.NumReceived() == 0 && w.ends[1].xsk.NumReceived() == 0 {
			if _, err := unix.Poll(fds, pollTimeout); err != nil && err != unix.EINTR {
				w.failed.Store(fmt.Errorf("afxdp poll: %w", err))
				return
			}
		}
		var now time.Duration
		if w.flows != nil {
			now = w.clock()
		}
		for i := range w.ends {
			batch[i] = portCounters{}
			w.forward(&w.ends[i], &w.ends[1-i], &batch[i], now)
		}
		for i := range w.ends {
			if batch[i].Malformed != 0 || batch[i].Drops != ([numDrops]uint64{}) {
				w.ends[i].counters.add(&batch[i])
			}
		}
	}
}

// refill gives the kernel free frames to receive into, once a quarter of
// the fill ring is empty (GetDescs scans the frame table, so not for every
// frame).
func refill(s *xdp.Socket) {
	if n := s.NumFreeFillSlots(); n >= afxdpSocketOptions.FillRingNumDescs/4 {
		s.Fill(s.GetDescs(n))
	}
}

// forward moves what src received to dst: one copy per frame into dst's
// UMEM, bytes unchanged, then one sendto for the whole batch.
func (w *afxdpWorker) forward(src, dst *afxdpEnd, c *portCounters, now time.Duration) {
	n := src.xsk.NumReceived()
	if n == 0 {
		return
	}
	rx := src.xsk.Receive(n)
	if done := dst.xsk.NumCompleted(); done > 0 {
		dst.xsk.Complete(done)
	}
	k := min(len(rx), dst.xsk.NumFreeTxSlots())
	tx := dst.xsk.GetDescs(k)
	if w.flows != nil {
		w.flows.mu.Lock()
	}
	for i := range tx {
		in := src.xsk.GetFrame(rx[i])
		p := ParseFrame(in)
		c.countMalformed(p.Malformed)
		if w.flows != nil && p.HasKey {
			p.Key.Port = uint8(src.port.index)
			w.flows.track(p.Key, uint64(len(in)), p.TCPFlags, now)
		}
		tx[i].Len = uint32(len(in))
		copy(dst.xsk.GetFrame(tx[i]), in)
	}
	if w.flows != nil {
		w.flows.mu.Unlock()
	}
	c.Drops[dropTxRingFull] += uint64(len(rx) - len(tx))
	if len(tx) == 0 {
		return
	}
	if err := transmit(dst.xsk, tx); err != nil {
		c.Drops[dropSendError] += uint64(len(tx))
	}
	kick(dst.xsk)
}

// maxKicks bounds the sendto calls per batch: in copy mode the kernel
// sends at most 32 frames per call (TX_BATCH_SIZE) and answers EAGAIN for
// the rest, which stay on the TX ring until the next call.
const maxKicks = 64

// kick calls sendto until the kernel has taken everything on the TX ring.
func kick(s *xdp.Socket) {
	for i := 0; i < maxKicks && s.NumFreeTxSlots() < afxdpSocketOptions.TxRingNumDescs; i++ {
		if transmit(s, nil) != nil {
			return
		}
	}
}

// transmit is xdp.Socket.Transmit without the panic: the library panics
// when sendto fails with anything but EAGAIN or EBUSY (ENETDOWN when the
// peer goes down, ENOBUFS, ENXIO). By then the descriptors are on the TX
// ring, so recovering leaves the socket consistent; the frames are counted
// as send errors and the worker goes on.
func transmit(s *xdp.Socket, descs []xdp.Desc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("afxdp transmit: %v", r)
		}
	}()
	s.Transmit(descs)
	return nil
}
