package forwarder

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/dataport"
	"github.com/ncpos/ncpos/dataport/fence"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc/health"
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
	// FlowControl leaves 802.3x PAUSE on the ports (off by default).
	FlowControl bool
	// NoCapture builds the port programs without the capture hook, so
	// that a bench can weigh what the hook costs while no capture runs;
	// such a forwarder refuses captures.
	NoCapture bool
	Segments  []Segment
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
	// leaving it before the forwarder reports itself unhealthy (3s, at
	// least two Intervals).
	ProgressWindow time.Duration
	// Logf receives notable events; log.Printf when nil.
	Logf func(format string, args ...any)
	// lldpTake gets the LLDP frames the ports receive, by the interface
	// they entered (the Forwarder's neighbours); nil: they are not read.
	lldpTake lldpTake
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
	if o.ProgressWindow < 2*o.Interval {
		// A stall verdict leaves out the newest interval's frames, so a
		// window needs at least two.
		return fmt.Errorf("forwarder: progress window %v is shorter than two sampling intervals (%v)", o.ProgressWindow, o.Interval)
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	for i := range o.Segments {
		s := &o.Segments[i]
		if s.MTU == 0 {
			s.MTU = config.DefaultMTU
		}
		if s.MTU < config.MinMTU || s.MTU > config.MaxMTU {
			return fmt.Errorf("forwarder: segment %s: MTU %d, want %d to %d", s.Name, s.MTU, config.MinMTU, config.MaxMTU)
		}
		if o.Engine == EngineAFXDP && s.MTU > config.AFXDPMaxMTU {
			return fmt.Errorf("forwarder: segment %s: MTU %d is more than the afxdp engine forwards (MTU %d, frames of %d bytes); use the xdp engine for jumbo frames",
				s.Name, s.MTU, config.AFXDPMaxMTU, config.AFXDPMaxMTU+config.FrameOverhead)
		}
	}
	if len(o.Segments) == 0 && len(o.Absent) > 0 {
		return nil
	}
	return checkSegments(o.Segments)
}

// port is one segment port.
type port struct {
	pos     int // in the forwarder's ports and samples: segment*2 + side
	slot    int // in the BPF maps, kept while the segment is
	segment *Segment
	label   string
	ifname  string
	ifindex int
	peer    *port

	settings  []dataport.Setting // as the driver read them back
	features  XDPFeatures
	known     bool   // features were read
	plan      string // the attach mode planned: XDPNative, XDPGeneric or XDPAuto
	attachWhy string // why the attach mode was chosen
	checkPeer bool   // native on the peer's promise, checked once it is attached
}

// engine is what both datapaths provide to the forwarder.
type engine interface {
	counters(ports []*port) ([]portCounters, error) // by position in ports
	attachMode(p *port) string                      // "native", "generic", "zerocopy", "copy"
	flowTable() flowSource                          // nil in forward mode
	// hook is how p's program hands frames to a capture (nil when p is
	// not attached), and which attachment of p's slot this is: a slot
	// attached anew counts up.
	hook(p *port) (*captureMaps, uint64)
	err() error // a datapath failure that makes it unhealthy
	close() error
}

// flowSource is a flow table, in BPF or in Go.
type flowSource interface {
	Stats() forwarderapi.FlowStats
	Sweep() error
}

// Forwarder runs one datapath over all segments.
type Forwarder struct {
	opts     Options
	ports    []*port
	eng      engine
	cores    forwarderapi.CorePlan
	started  time.Time
	notes    []string // what the datapath cannot do here, for /status
	lldp     neighbors
	captures captures

	// change is held while the segments change (Reconfigure) and while
	// a sample is taken, so that a sample never spans two sets of ports.
	change sync.Mutex

	mu        sync.Mutex // guards what follows, and ports, opts, eng and cores
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
	n := c.Passed
	for _, d := range []int{dropTxRingFull, dropSendError, dropXSKRx, dropRedirectTooBig, dropRedirectNoXmit, dropRedirectPeerDown, dropRedirectFailed} {
		n -= c.Drops[d]
	}
	return n
}

// accountLost carries egress_lost forward from prev: per port, what its
// peer handed on minus what it transmitted and what its driver counted as
// dropped on transmit (kernel_tx) in the interval. Signed, so that a frame
// counted as handed in one sample and as sent in the next evens out; an
// interval where a counter went backwards (a veth resets its counters when
// its peer's XDP state changes) is skipped.
func accountLost(prev, s *sample, ports []*port) {
	s.lost = make([]int64, len(ports))
	for i, p := range ports {
		if prev.lost == nil {
			break
		}
		s.lost[i] = prev.lost[i]
		in0, in1 := handed(&prev.ports[p.peer.pos]), handed(&s.ports[p.peer.pos])
		out0, out1 := prev.links[i].txPackets+prev.links[i].txDropped, s.links[i].txPackets+s.links[i].txDropped
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
	f := &Forwarder{opts: opts, started: time.Now()}
	f.conds = health.Tracker{Source: "forwarderd", Changed: f.logCondition}
	f.opts.lldpTake = f.lldp.take
	if len(f.opts.Segments) == 0 {
		// Every segment lacks a port: nothing to attach, but forwarderd
		// still runs and reports why.
		f.eng = idleEngine{}
		f.heartbeat = time.Now()
		f.sample = sample{at: f.heartbeat}
		return f, nil
	}
	if f.ports, f.cores, f.eng, err = startEngine(&f.opts); err != nil {
		return nil, err
	}
	f.lldp.setPorts(f.ports)
	f.notes = engineNotes(f.eng)
	f.heartbeat = time.Now()
	if err := f.takeSample(); err != nil {
		f.eng.close()
		return nil, err
	}
	return f, nil
}

// engineNotes are what the engine cannot do here, for /status.
func engineNotes(eng engine) []string {
	if x, ok := eng.(*xdpEngine); ok && x.note != "" {
		return []string{x.note}
	}
	return nil
}

// newPorts makes the ports of segs, in slots 2*i and 2*i+1.
func newPorts(segs []Segment) []*port {
	var ports []*port
	for i := range segs {
		a, b := newPair(&segs[i], 2*i)
		ports = append(ports, a, b)
	}
	return ports
}

// newPair makes a segment's two ports in slots slot and slot+1.
func newPair(s *Segment, slot int) (a, b *port) {
	a = &port{slot: slot, segment: s, label: s.Labels[0], ifname: s.Interfaces[0]}
	b = &port{slot: slot + 1, segment: s, label: s.Labels[1], ifname: s.Interfaces[1]}
	a.peer, b.peer = b, a
	for _, p := range []*port{a, b} {
		if p.label == "" {
			p.label = p.ifname
		}
	}
	return a, b
}

// startEngine prepares every segment's ports, associates their queues
// with cores and starts the engine over them.
func startEngine(opts *Options) ([]*port, forwarderapi.CorePlan, engine, error) {
	ports := newPorts(opts.Segments)
	var ifnames []string
	for i, p := range ports {
		p.pos = i
		if err := preparePort(p, opts); err != nil {
			return nil, forwarderapi.CorePlan{}, nil, err
		}
		ifnames = append(ifnames, p.ifname)
	}
	assoc := &coreAssociator{root: opts.Root, channels: ethtoolChannels{}}
	cores := assoc.Associate(ifnames, opts.Cores)
	var eng engine
	var err error
	switch opts.Engine {
	case EngineXDP:
		eng, err = newXDPEngine(ports, opts)
	case EngineAFXDP:
		eng, err = newAFXDPEngine(ports, opts, &cores)
	}
	if err != nil {
		return nil, cores, nil, err
	}
	return ports, cores, eng, nil
}

// preparePort makes the interface a wire's end: its IP stack quieted and
// fenced off (dataport), its MTU the segment's, the NIC's VLAN offloads,
// flow control and LLDP agent off, promiscuous (a wire passes frames for
// every MAC) and up. A setting the driver refuses is reported, not fatal;
// a port that cannot be quieted, fenced or given its MTU is not used.
func preparePort(p *port, opts *Options) error {
	l, err := netlink.LinkByName(p.ifname)
	if err != nil {
		return fmt.Errorf("forwarder: port %s (%s): %w", p.label, p.ifname, err)
	}
	p.ifindex = l.Attrs().Index
	if err := dataport.Quiet(opts.Root, p.ifname); err != nil {
		return fmt.Errorf("forwarder: port %s: %w", p.label, err)
	}
	if err := fence.Install(p.ifname); err != nil {
		return fmt.Errorf("forwarder: port %s: %w", p.label, err)
	}
	if l.Attrs().MTU != p.segment.MTU {
		if err := netlink.LinkSetMTU(l, p.segment.MTU); err != nil {
			return fmt.Errorf("forwarder: port %s (%s): setting MTU %d of segment %s: %w", p.label, p.ifname, p.segment.MTU, p.segment.Name, err)
		}
	}
	p.settings = dataport.Configure(p.ifname, dataport.Want{FlowControl: opts.FlowControl})
	for _, s := range p.settings {
		if s.Result == dataport.SettingRefused {
			opts.Logf("port %s (%s): %s wanted %s, the driver keeps it %s: %s", p.label, p.ifname, s.Name, s.Want, s.Got, s.Detail)
		}
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
			f.mu.Lock()
			eng := f.eng
			f.mu.Unlock()
			if ft := eng.flowTable(); ft != nil && now.Sub(lastSweep) >= f.opts.SweepInterval {
				lastSweep = now
				if err := ft.Sweep(); err != nil {
					f.opts.Logf("sweeping flows: %v", err)
				}
			}
			f.mu.Lock()
			f.heartbeat = time.Now()
			f.mu.Unlock()
			// Conditions are worked out at every sample, not only when
			// someone asks, so that the log tells when each begins.
			f.check(now)
		}
	}
}

// logCondition logs a condition that begins or ends.
func (f *Forwarder) logCondition(c health.Condition, raised bool) {
	if raised {
		f.opts.Logf("condition began: %s", c)
	} else {
		f.opts.Logf("condition ended: %s", c)
	}
}

func (f *Forwarder) takeSample() error {
	// While the segments change no sample is taken, and Run beats the
	// heartbeat all the same: a long change (ports prepared, programs
	// loaded) is no sign of a hung forwarder.
	if !f.change.TryLock() {
		return nil
	}
	defer f.change.Unlock()
	pc, err := f.eng.counters(f.ports)
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
	f.change.Lock()
	defer f.change.Unlock()
	return f.eng.close()
}

// idleEngine is the datapath of a forwarder whose every segment lacks a
// port.
type idleEngine struct{}

func (idleEngine) counters(ports []*port) ([]portCounters, error) {
	return make([]portCounters, len(ports)), nil
}
func (idleEngine) attachMode(*port) string { return "" }

func (idleEngine) hook(*port) (*captureMaps, uint64) { return nil, 0 }
func (idleEngine) flowTable() flowSource             { return nil }
func (idleEngine) err() error                        { return nil }
func (idleEngine) close() error                      { return nil }
