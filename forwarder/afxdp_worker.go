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
	tx       txFrames
	counters goCounters
}

// complete takes back the frames the kernel has sent from this end.
func (e *afxdpEnd) complete() {
	if n := e.xsk.NumCompleted(); n > 0 {
		e.xsk.Complete(n)
		e.tx.free += n
	}
}

// txFrames hands out the UMEM frames a socket sends from, the upper part
// of its UMEM (the lower part receives, see afxdpRxFrames), in order, and
// takes them back in the same order: the kernel consumes the TX ring in
// order and reports completions in that order, so a counter is the whole
// bookkeeping. asavie's GetDescs would scan its frame table for each batch.
type txFrames struct {
	head, free int
	descs      []xdp.Desc // reused for each batch
}

func newTXFrames() txFrames {
	return txFrames{free: afxdpTxFrames, descs: make([]xdp.Desc, 0, afxdpTxFrames)}
}

// take returns k frames (k <= free) to copy into and send.
func (t *txFrames) take(k int) []xdp.Desc {
	d := t.descs[:k]
	size := uint64(afxdpSocketOptions.FrameSize)
	for i := range d {
		d[i].Addr = uint64(afxdpRxFrames+(t.head+i)%afxdpTxFrames) * size
	}
	t.head = (t.head + k) % afxdpTxFrames
	t.free -= k
	return d
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
			w.ends[i].complete()
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

// forward moves what src received to dst: one copy per frame into dst's
// UMEM, bytes unchanged, then one sendto for the whole batch. It takes
// only as many frames as dst can send and leaves the rest in src's RX
// ring for the next round, so that a burst waits rather than being
// dropped; only when dst can send nothing at all (its link is down, its
// ring is stuck) are the received frames dropped, so that the worker does
// not spin on them. The received frames go straight back to src's fill
// ring, forwarded or not.
func (w *afxdpWorker) forward(src, dst *afxdpEnd, c *portCounters, now time.Duration) {
	n := src.xsk.NumReceived()
	if n == 0 {
		return
	}
	dst.complete()
	room := min(dst.tx.free, dst.xsk.NumFreeTxSlots())
	if room > 0 {
		n = min(n, room)
	}
	rx := src.xsk.Receive(n)
	tx := dst.tx.take(min(len(rx), room))
	if w.flows != nil {
		w.flows.mu.Lock()
	}
	for i := range tx {
		in := src.xsk.GetFrame(rx[i])
		// Malformations were counted by port_xsk; only service mode
		// needs the frame parsed.
		if w.flows != nil {
			if p := ParseFrame(in); p.HasKey {
				p.Key.Port = uint8(src.port.slot)
				w.flows.track(p.Key, uint64(len(in)), p.TCPFlags, now)
			}
		}
		tx[i].Len = uint32(len(in))
		copy(dst.xsk.GetFrame(tx[i]), in)
	}
	if w.flows != nil {
		w.flows.mu.Unlock()
	}
	c.Drops[dropTxRingFull] += uint64(len(rx) - len(tx))
	src.xsk.Fill(rx)
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
