package forwarder

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/health"
)

// Engines and modes, as the configuration spells them.
const (
	EngineXDP   = "xdp"
	EngineAFXDP = "afxdp"
	ModeForward = "forward"
	ModeService = "service"
)

// Options say what to bridge and how.
type Options struct {
	Engine        string // EngineXDP (default) or EngineAFXDP
	Mode          string // ModeForward (default) or ModeService
	Cores         int    // forwarding cores; 0 = all but one
	FlowTableSize int    // service mode; 0 = 1,000,000
	FlowIdle      time.Duration
	XDPMode       string // XDPAuto (default), XDPNative or XDPGeneric
	Segments      []Segment
	// Absent are the configuration's segments that cannot be bridged
	// because the box lacks a port: reported, never forwarded.
	Absent []AbsentSegment

	// Root is where sys/ and proc/ are found for core association ("/").
	Root string
	// Interval is the heartbeat and sampling period (1s).
	Interval time.Duration
	// SweepInterval is how often the flow table is swept (5s).
	SweepInterval time.Duration
	// ProgressWindow is how long frames may enter a segment without any
	// leaving it before the forwarder reports itself unhealthy (3s).
	ProgressWindow time.Duration
	// Logf receives notable events; log.Printf when nil.
	Logf func(format string, args ...any)
}

func (o *Options) setDefaults() error {
	if o.Engine == "" {
		o.Engine = EngineXDP
	}
	if o.Mode == "" {
		o.Mode = ModeForward
	}
	if o.Engine != EngineXDP && o.Engine != EngineAFXDP {
		return fmt.Errorf("forwarder: unknown engine %q, want xdp or afxdp", o.Engine)
	}
	if o.Mode != ModeForward && o.Mode != ModeService {
		return fmt.Errorf("forwarder: unknown mode %q, want forward or service", o.Mode)
	}
	if o.XDPMode == "" {
		o.XDPMode = XDPAuto
	}
	if o.FlowTableSize <= 0 {
		o.FlowTableSize = 1_000_000
	}
	if o.FlowIdle <= 0 {
		o.FlowIdle = DefaultFlowIdle
	}
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = 5 * time.Second
	}
	if o.ProgressWindow <= 0 {
		o.ProgressWindow = 3 * time.Second
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	if len(o.Segments) == 0 && len(o.Absent) > 0 {
		return nil
	}
	return checkSegments(o.Segments)
}

// port is one segment port.
type port struct {
	index   int // slot in the BPF maps: segment*2 + side
	segment *Segment
	label   string
	ifname  string
	ifindex int
	peer    *port
}

// engine is what both datapaths provide to the forwarder.
type engine interface {
	counters(n int) ([]portCounters, error)
	attachMode(i int) string // "native", "generic", "zerocopy", "copy"
	flowTable() flowSource   // nil in forward mode
	err() error              // a datapath failure that makes it unhealthy
	close() error
}

// flowSource is a flow table, in BPF or in Go.
type flowSource interface {
	Stats() FlowStats
	Sweep() error
}

// Forwarder runs one datapath over all segments.
type Forwarder struct {
	opts    Options
	ports   []*port
	eng     engine
	cores   CorePlan
	started time.Time

	mu        sync.Mutex
	heartbeat time.Time
	sample    sample   // latest
	history   []sample // within ProgressWindow, oldest first
	sampleErr error
	conds     health.Tracker
}

// sample is one reading of every counter.
type sample struct {
	at    time.Time
	ports []portCounters
	links []linkStats
	lost  []int64 // egress_lost per port, accumulated over samples
}

// handed is what a port's datapath gave on to its peer port.
func handed(c *portCounters) uint64 {
	return c.Passed - c.Drops[dropTxRingFull] - c.Drops[dropSendError] - c.Drops[dropXSKRx]
}

// accountLost carries egress_lost forward from prev: per port, what its
// peer handed on minus what it transmitted in the interval. Signed, so that
// a frame counted as handed in one sample and as sent in the next evens
// out; an interval where a counter went backwards (a veth resets its
// counters when its peer's XDP state changes) is skipped.
func accountLost(prev, s *sample, ports []*port) {
	s.lost = make([]int64, len(ports))
	for i, p := range ports {
		if prev.lost == nil {
			break
		}
		s.lost[i] = prev.lost[i]
		in0, in1 := handed(&prev.ports[p.peer.index]), handed(&s.ports[p.peer.index])
		out0, out1 := prev.links[i].txPackets, s.links[i].txPackets
		if in1 < in0 || out1 < out0 {
			continue
		}
		s.lost[i] += int64(in1-in0) - int64(out1-out0)
	}
}

// linkStats are the kernel's view of a port.
type linkStats struct {
	missing              bool   // the interface is gone
	xdpProg              uint32 // the XDP program attached, 0 for none
	up                   bool
	operState            string
	rxPackets, rxBytes   uint64
	txPackets, txBytes   uint64
	rxDropped, txDropped uint64
}

// Start prepares the ports (up, promiscuous, silent), associates queues
// with cores and starts the engine. Close undoes it; so does the death of
// the process, as far as the datapath is concerned.
func Start(opts Options) (_ *Forwarder, err error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	f := &Forwarder{opts: opts, started: time.Now(), conds: health.Tracker{Source: "forwarderd"}}
	if len(f.opts.Segments) == 0 {
		// Every segment lacks a port: nothing to attach, but forwarderd
		// still runs and reports why.
		f.eng = idleEngine{}
		f.heartbeat = time.Now()
		f.sample = sample{at: f.heartbeat}
		return f, nil
	}
	for i := range f.opts.Segments {
		s := &f.opts.Segments[i]
		a := &port{index: 2 * i, segment: s, label: s.Labels[0], ifname: s.Interfaces[0]}
		b := &port{index: 2*i + 1, segment: s, label: s.Labels[1], ifname: s.Interfaces[1]}
		a.peer, b.peer = b, a
		f.ports = append(f.ports, a, b)
	}
	var ifnames []string
	for _, p := range f.ports {
		if p.label == "" {
			p.label = p.ifname
		}
		if err := preparePort(p, opts.Logf); err != nil {
			return nil, err
		}
		ifnames = append(ifnames, p.ifname)
	}
	assoc := &coreAssociator{root: opts.Root, channels: ethtoolChannels{}}
	f.cores = assoc.Associate(ifnames, opts.Cores)

	switch opts.Engine {
	case EngineXDP:
		f.eng, err = newXDPEngine(f.ports, &f.opts)
	case EngineAFXDP:
		f.eng, err = newAFXDPEngine(f.ports, &f.opts, &f.cores)
	}
	if err != nil {
		return nil, err
	}
	f.heartbeat = time.Now()
	if err := f.takeSample(); err != nil {
		f.eng.close()
		return nil, err
	}
	return f, nil
}

// preparePort finds the interface, brings it up, makes it promiscuous (a
// wire passes frames for every MAC) and keeps the kernel from sending
// anything of its own through it (no IPv6 link-local, no router
// solicitations): a segment port has no address and says nothing.
func preparePort(p *port, logf func(string, ...any)) error {
	l, err := netlink.LinkByName(p.ifname)
	if err != nil {
		return fmt.Errorf("forwarder: port %s (%s): %w", p.label, p.ifname, err)
	}
	p.ifindex = l.Attrs().Index
	sysctl := filepath.Join("/proc/sys/net/ipv6/conf", p.ifname, "disable_ipv6")
	if err := os.WriteFile(sysctl, []byte("1\n"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		logf("port %s: disabling IPv6: %v", p.ifname, err)
	}
	if err := netlink.SetPromiscOn(l); err != nil {
		return fmt.Errorf("forwarder: port %s promiscuous: %w", p.ifname, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("forwarder: port %s up: %w", p.ifname, err)
	}
	return nil
}

// Run beats the heartbeat, samples counters and sweeps the flow table until
// ctx is done. It does not close the forwarder.
func (f *Forwarder) Run(ctx context.Context) {
	tick := time.NewTicker(f.opts.Interval)
	defer tick.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if err := f.takeSample(); err != nil {
				f.opts.Logf("sampling counters: %v", err)
			}
			if ft := f.eng.flowTable(); ft != nil && now.Sub(lastSweep) >= f.opts.SweepInterval {
				lastSweep = now
				if err := ft.Sweep(); err != nil {
					f.opts.Logf("sweeping flows: %v", err)
				}
			}
			f.mu.Lock()
			f.heartbeat = time.Now()
			f.mu.Unlock()
		}
	}
}

func (f *Forwarder) takeSample() error {
	pc, err := f.eng.counters(len(f.ports))
	if err != nil {
		f.mu.Lock()
		f.sampleErr = err
		f.mu.Unlock()
		return err
	}
	s := sample{at: time.Now(), ports: pc, links: make([]linkStats, len(f.ports))}
	// Links after the datapath counters: a frame counted as sent is then
	// always also counted as handed on.
	for i, p := range f.ports {
		s.links[i] = readLink(p.ifindex)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sample.ports != nil {
		accountLost(&f.sample, &s, f.ports)
	} else {
		s.lost = make([]int64, len(f.ports))
	}
	f.sampleErr = nil
	f.sample = s
	f.history = append(f.history, s)
	// Keep one sample older than the window, so that a full window is
	// always covered.
	for len(f.history) > 2 && s.at.Sub(f.history[1].at) >= f.opts.ProgressWindow {
		f.history = f.history[1:]
	}
	return nil
}

func readLink(ifindex int) linkStats {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return linkStats{missing: true, operState: "missing: " + err.Error()}
	}
	a := l.Attrs()
	ls := linkStats{up: a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown, operState: a.OperState.String()}
	if a.Xdp != nil && a.Xdp.Attached {
		ls.xdpProg = a.Xdp.ProgId
	}
	if st := a.Statistics; st != nil {
		ls.rxPackets, ls.rxBytes = st.RxPackets, st.RxBytes
		ls.txPackets, ls.txBytes = st.TxPackets, st.TxBytes
		ls.rxDropped, ls.txDropped = st.RxDropped, st.TxDropped
	}
	return ls
}

// Close detaches the datapath and releases its maps.
func (f *Forwarder) Close() error {
	return f.eng.close()
}

// idleEngine is the datapath of a forwarder whose every segment lacks a
// port.
type idleEngine struct{}

func (idleEngine) counters(n int) ([]portCounters, error) { return make([]portCounters, n), nil }
func (idleEngine) attachMode(int) string                  { return "" }
func (idleEngine) flowTable() flowSource                  { return nil }
func (idleEngine) err() error                             { return nil }
func (idleEngine) close() error                           { return nil }
