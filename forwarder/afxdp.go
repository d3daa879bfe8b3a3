package forwarder

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/asavie/xdp"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/xsk"
)

// afxdpEngine forwards in userspace. Per port, an instance of port_xsk
// (attached through a BPF link, not asavie's netlink attach, so that it
// dies with the process) hands each frame to the AF_XDP socket of its
// receive queue; one worker per queue pair, on that queue's forwarding
// core, moves frames between the two ports' sockets in batches.
//
// github.com/asavie/xdp provides the sockets. It is wrapped here because:
// its Transmit panics on an unexpected sendto error (recovered and counted
// as send_error, the ring state is consistent by then); its sockets cannot
// share a UMEM, so a frame is copied once from the receiving socket's UMEM
// into the sending one's (unmodified: unlike its l2fwd example, no MAC is
// rewritten), with frames handed out by the worker's own bookkeeping, not
// its GetDescs, which scans the whole frame table per call; and its
// zero-copy choice is a package global, set here per bind, trying
// XDP_ZEROCOPY first and falling back to copy mode.
type afxdpEngine struct {
	counts    *ebpf.Map
	capture   *captureMaps
	noCapture bool // the programs have no capture hook
	xsks      []*ebpf.Map
	progs     []*ebpf.Program
	links     []link.Link
	sockets   [][]*xdp.Socket // per port, per queue
	binds     []string        // "zerocopy" or "copy" per port
	workers   []*afxdpWorker
	flows     *goFlowTable
	lldp      *lldpRing
	nports    int

	wg   sync.WaitGroup
	stop atomic.Bool
}

// Socket geometry: 2048-byte frames hold any standard frame. The first
// afxdpRxFrames of each UMEM receive: they go round between the fill ring,
// the RX ring and the worker, which hands each back to the fill ring once
// copied; 2048 of them absorb a burst of over a millisecond at 1.5 Mpps
// while the worker is kept off its core (with 512, the lab's flow-table
// test lost frames). The rest send (txFrames): in copy mode the kernel
// copies a frame out within the sendto, so fewer suffice.
const (
	afxdpRxFrames = 2048
	afxdpTxFrames = 512
)

var afxdpSocketOptions = xdp.SocketOptions{
	NumFrames:              afxdpRxFrames + afxdpTxFrames,
	FrameSize:              2048,
	FillRingNumDescs:       afxdpRxFrames,
	CompletionRingNumDescs: afxdpTxFrames,
	RxRingNumDescs:         afxdpRxFrames,
	TxRingNumDescs:         afxdpTxFrames,
}

// raiseTxBudget lets one sendto send the whole TX ring where the kernel
// allows it (XDP_MAX_TX_SKB_BUDGET, Linux 6.17 and later): in copy mode a
// sendto otherwise sends at most 32 frames, and the syscalls to drain a
// batch cost a tenth of the forwarding rate in the lab. Older kernels
// refuse the option, which changes nothing but the number of syscalls.
func raiseTxBudget(s *xdp.Socket) {
	_ = unix.SetsockoptInt(s.FD(), unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, afxdpTxFrames)
}

// fillAll gives the kernel every receive frame of a new socket.
func fillAll(s *xdp.Socket) {
	descs := make([]xdp.Desc, afxdpRxFrames)
	for i := range descs {
		descs[i].Addr = uint64(i * afxdpSocketOptions.FrameSize)
	}
	s.Fill(descs)
}

// newXSK binds a socket to queue q of ifindex, zero-copy if the driver
// allows it, copy mode otherwise. A queue stays busy for a moment after its
// previous socket's process died (the kernel releases it asynchronously),
// which is exactly when a supervisor restarts forwarderd: so EBUSY is
// retried for a few seconds.
func newXSK(ifindex, q int) (*xdp.Socket, string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, bind, err := bindXSK(ifindex, q)
		// asavie formats errors with %v, so the errno is only in the text.
		if err == nil || !strings.Contains(err.Error(), unix.EBUSY.Error()) || time.Now().After(deadline) {
			return s, bind, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func bindXSK(ifindex, q int) (*xdp.Socket, string, error) {
	var errs []error
	for _, try := range []struct {
		flags uint16
		name  string
	}{{unix.XDP_ZEROCOPY, "zerocopy"}, {unix.XDP_COPY, "copy"}} {
		s, err := xsk.Bind(ifindex, q, try.flags, &afxdpSocketOptions)
		if err == nil {
			return s, try.name, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", try.name, err))
	}
	return nil, "", errors.Join(errs...)
}

func newAFXDPEngine(ports []*port, opts *Options, plan *forwarderapi.CorePlan) (_ engine, err error) {
	spec, err := datapathSpec()
	if err != nil {
		return nil, err
	}
	e := &afxdpEngine{nports: len(ports), binds: make([]string, len(ports))}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.counts, err = newSharedMap(spec, bpf.DatapathMapPortCounts, 0); err != nil {
		return nil, err
	}
	if e.lldp, err = newLLDPRing(spec, opts.lldpTake); err != nil {
		return nil, err
	}
	if e.capture, err = newCaptureMaps(spec); err != nil {
		return nil, err
	}
	e.noCapture = opts.NoCapture
	queues := make([]int, len(ports))
	cpus := make([][]int, len(ports))
	for i := range ports {
		queues[i] = 1
		if i < len(plan.Ports) && len(plan.Ports[i].Queues) > 0 {
			queues[i] = len(plan.Ports[i].Queues)
			for _, q := range plan.Ports[i].Queues {
				cpus[i] = append(cpus[i], q.CPU)
			}
		}
	}
	// Sockets first, registered by queue in each port's own XSKMAP.
	for i, p := range ports {
		xsks, err := newSharedMap(spec, bpf.DatapathMapXsks, 0)
		if err != nil {
			return nil, err
		}
		e.xsks = append(e.xsks, xsks)
		var socks []*xdp.Socket
		for q := 0; q < queues[i]; q++ {
			s, bind, err := newXSK(p.ifindex, q)
			if err != nil {
				return nil, fmt.Errorf("forwarder: AF_XDP socket on %s queue %d: %w", p.ifname, q, err)
			}
			// Receive buffers before any frame can arrive: a socket
			// with an empty fill ring drops what the program hands it.
			fillAll(s)
			raiseTxBudget(s)
			socks = append(socks, s)
			e.binds[i] = bind
			if err := xsks.Put(uint32(q), uint32(s.FD())); err != nil {
				return nil, fmt.Errorf("forwarder: registering socket of %s queue %d: %w", p.ifname, q, err)
			}
		}
		e.sockets = append(e.sockets, socks)
	}
	if opts.Mode == ModeService {
		e.flows = newGoFlowTable(opts.FlowTableSize, 1, opts.FlowIdle)
	}
	for i := 0; i < len(ports); i += 2 {
		a, b := ports[i], ports[i+1]
		// Queues beyond the smaller port's count have no partner socket;
		// the forwarder sets both ports to the same count, so this is
		// only a driver that refused.
		for q := 0; q < min(queues[i], queues[i+1]); q++ {
			w := &afxdpWorker{
				ends: [2]afxdpEnd{{port: a, xsk: e.sockets[i][q], tx: newTXFrames()}, {port: b, xsk: e.sockets[i+1][q], tx: newTXFrames()}},
				cpu:  -1, stop: &e.stop,
			}
			if q < len(cpus[i]) {
				w.cpu = cpus[i][q]
			}
			if e.flows != nil {
				w.flows = e.flows.shards[len(e.workers)%len(e.flows.shards)]
				w.clock = e.flows.now
			}
			w.beat.Store(time.Now().UnixNano())
			e.workers = append(e.workers, w)
		}
	}
	maps := make([]map[string]*ebpf.Map, len(ports))
	for i := range ports {
		maps[i] = e.capture.add(e.lldp.add(map[string]*ebpf.Map{
			bpf.DatapathMapPortCounts: e.counts, bpf.DatapathMapXsks: e.xsks[i],
		}))
	}
	if e.progs, err = loadPrograms(len(ports), func(i int) (*ebpf.Program, error) {
		prog, err := loadPortProgram(spec, bpf.DatapathProgPortXsk, ports[i].slot, ports[i].segment.MTU, maps[i], opts.NoCapture)
		if err != nil {
			return nil, fmt.Errorf("port %s (%s): %w", ports[i].label, ports[i].ifname, err)
		}
		return prog, nil
	}); err != nil {
		return nil, err
	}
	for i, p := range ports {
		l, _, _, err := attachXDP(e.progs[i], p.ifindex, opts.XDPMode)
		if err != nil {
			return nil, fmt.Errorf("forwarder: attaching XDP to %s: %w", p.ifname, err)
		}
		e.links = append(e.links, l)
	}
	for _, w := range e.workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			w.run()
		}()
	}
	return e, nil
}

func (e *afxdpEngine) attachMode(p *port) string { return e.binds[p.pos] }

// hook: the engine attaches its ports once, so their attachment is
// always the first.
func (e *afxdpEngine) hook(p *port) (*captureMaps, uint64) {
	if p.pos >= len(e.links) || e.noCapture {
		return nil, 0
	}
	return e.capture, 0
}

func (e *afxdpEngine) flowTable() flowSource {
	if e.flows == nil {
		return nil
	}
	return e.flows
}

// counters merges the BPF counters (frames in, frames without a socket)
// with the workers' (malformations, frames the peer could not take).
func (e *afxdpEngine) counters(ports []*port) ([]portCounters, error) {
	out, err := readPortCounts(e.counts, ports)
	if err != nil {
		return nil, err
	}
	for _, w := range e.workers {
		for i := range w.ends {
			c := w.ends[i].counters.snapshot()
			out[w.ends[i].port.pos].merge(&c)
		}
	}
	for i, socks := range e.sockets {
		for _, s := range socks {
			st, err := xskStats(s.FD())
			if err != nil {
				return nil, err
			}
			out[i].Drops[dropXSKRx] += st.Rx_dropped + st.Rx_ring_full + st.Rx_fill_ring_empty_descs
		}
	}
	return out, nil
}

// xskStats reads a socket's kernel counters (XDP_STATISTICS). asavie's
// Stats reads its rings too, which only the worker may touch.
func xskStats(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	size := uint32(unsafe.Sizeof(st))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return st, fmt.Errorf("forwarder: AF_XDP socket statistics: %w", errno)
	}
	return st, nil
}

// err reports a worker that died or stopped looping: its queues are not
// being served.
func (e *afxdpEngine) err() error {
	for _, w := range e.workers {
		if err, _ := w.failed.Load().(error); err != nil {
			return err
		}
		if age := time.Since(time.Unix(0, w.beat.Load())); age > 5*time.Second {
			return fmt.Errorf("afxdp worker %s/%s stuck for %v", w.ends[0].port.ifname, w.ends[1].port.ifname, age.Round(time.Second))
		}
	}
	return nil
}

func (e *afxdpEngine) close() error {
	var errs []error
	for _, l := range e.links {
		errs = append(errs, l.Close())
	}
	e.stop.Store(true)
	e.wg.Wait()
	for _, socks := range e.sockets {
		for _, s := range socks {
			errs = append(errs, s.Close())
		}
	}
	for _, p := range e.progs {
		errs = append(errs, p.Close())
	}
	errs = append(errs, e.lldp.close())
	errs = append(errs, e.capture.close())
	for _, m := range append(e.xsks, e.counts) {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
