package forwarder

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder/bpf"
)

// XDP attach modes, as reported per port and as the -xdp-mode flag takes.
const (
	XDPAuto    = "auto"    // native where the driver has it, generic otherwise
	XDPNative  = "native"  // in the driver's receive path
	XDPGeneric = "generic" // after the kernel built an skb: slower, works everywhere
)

// xdpEngine forwards in the kernel: one instance of port_forward (or
// port_service) per port redirects each frame to the segment peer through
// the egress DEVMAP. Programs are attached through BPF links, which belong
// to this process: when forwarderd dies, however it dies, the kernel
// detaches them, so no program is left behind to black-hole a segment.
type xdpEngine struct {
	spec           *ebpf.CollectionSpec
	progName       string
	egress, counts *ebpf.Map
	capture        *captureMaps
	noCapture      bool                 // the programs have no capture hook
	maps           map[string]*ebpf.Map // the maps every port program shares
	flows          *flowTable           // service mode only
	// By port slot: a segment's ports are attached and detached on
	// their own (attachPair, detachPair), under mu, which Status's
	// reading of the modes also takes.
	mu        sync.Mutex
	progs     map[int]*ebpf.Program
	progIDs   map[int]uint32
	links     map[int]link.Link
	modes     map[int]string // attach mode
	gens      map[int]uint64 // attachments of the slot so far, for captures
	redirects *redirectCounters
	note      string // why redirect failures are not counted
	lldp      *lldpRing
}

// datapathSpec is the compiled port.c.
func datapathSpec() (*ebpf.CollectionSpec, error) {
	spec, err := bpf.LoadDatapath()
	if err != nil {
		return nil, fmt.Errorf("forwarder: loading BPF object: %w", err)
	}
	return spec, nil
}

// newSharedMap creates one of port.c's maps for all port programs to share.
func newSharedMap(spec *ebpf.CollectionSpec, name string, maxEntries uint32) (*ebpf.Map, error) {
	ms, ok := spec.Maps[name]
	if !ok {
		return nil, fmt.Errorf("forwarder: BPF object has no map %s", name)
	}
	ms = ms.Copy()
	if maxEntries > 0 {
		ms.MaxEntries = maxEntries
	}
	m, err := ebpf.NewMap(ms)
	if err != nil {
		return nil, fmt.Errorf("forwarder: creating BPF map %s (%d entries): %w", name, ms.MaxEntries, err)
	}
	return m, nil
}

// loadPortProgram loads one instance of the named program for port slot
// index of a segment with the given MTU, using the given shared maps, with
// the capture hook unless noCapture.
func loadPortProgram(spec *ebpf.CollectionSpec, name string, index, mtu int, maps map[string]*ebpf.Map, noCapture bool) (*ebpf.Program, error) {
	return loadProgramWith(spec, name, maps, func(s *ebpf.CollectionSpec) error {
		for v, val := range portConstants(name, index, mtu, noCapture) {
			if err := s.Variables[v].Set(val); err != nil {
				return fmt.Errorf("forwarder: setting %s: %w", v, err)
			}
		}
		return nil
	})
}

// loadPrograms runs n loads side by side, as many at once as there are
// cores, and returns their programs in order, or the first failed load's
// error with the programs that did load closed (a program the verifier
// refuses fails on every port alike, each with its whole log). The kernel
// verifies each port's program on its own, which is most of what
// attaching a segment costs; a box with more than one core verifies its
// ports' programs at once, at the cost of the verifier's memory for as
// many programs.
func loadPrograms(n int, load func(i int) (*ebpf.Program, error)) ([]*ebpf.Program, error) {
	progs := make([]*ebpf.Program, n)
	errs := make([]error, n)
	cores := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cores <- struct{}{}
			defer func() { <-cores }()
			progs[i], errs[i] = load(i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			continue
		}
		for _, p := range progs {
			if p != nil {
				p.Close()
			}
		}
		return nil, err
	}
	return progs, nil
}

// portConstants are the constants a port program is loaded with.
func portConstants(name string, index, mtu int, noCapture bool) map[string]uint32 {
	c := map[string]uint32{bpf.DatapathVarPortIndex: uint32(index)}
	if oneBuffer(mtu) && name != bpf.DatapathProgPortService {
		c[bpf.DatapathVarOneBuffer] = 1
	}
	if noCapture {
		c[bpf.DatapathVarCaptureSupport] = 0
	}
	return c
}

// oneBuffer says whether a port of this MTU receives every frame in one
// buffer, so that its program can take the first buffer's length for the
// frame's and save a helper call per frame (port.c): drivers size their
// receive buffers for the MTU and split only frames longer than a page
// can hold, and the default MTU's are far from that.
//
// Service mode asks for every frame's length all the same: there the
// second look that a failed length check takes (port.c) made the verifier
// go through the flow key's paths twice, 94 000 instructions instead of
// 49 000, which a box pays per port at every start.
func oneBuffer(mtu int) bool { return mtu > 0 && mtu <= config.DefaultMTU }

// loadProgram loads the named program over the given shared maps.
func loadProgram(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map) (*ebpf.Program, error) {
	return loadProgramWith(spec, name, maps, func(*ebpf.CollectionSpec) error { return nil })
}

// loadProgramWith loads the named program, using the given shared maps,
// after set has set its variables. Everything else in the object is left
// out, so that, say, forward mode never allocates the flow table.
func loadProgramWith(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map, set func(*ebpf.CollectionSpec) error) (*ebpf.Program, error) {
	s := spec.Copy()
	ps, ok := s.Programs[name]
	if !ok {
		return nil, fmt.Errorf("forwarder: BPF object has no program %s", name)
	}
	s.Programs = map[string]*ebpf.ProgramSpec{name: ps}
	for name, ms := range s.Maps {
		m, shared := maps[name]
		switch {
		case shared:
			ms.MaxEntries = m.MaxEntries() // sized at creation
		case !strings.HasPrefix(name, "."):
			delete(s.Maps, name)
		}
	}
	if err := set(s); err != nil {
		return nil, err
	}
	coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: maps})
	if err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("forwarder: loading %s: %+v", name, verr)
		}
		return nil, fmt.Errorf("forwarder: loading %s: %w", name, err)
	}
	prog := coll.DetachProgram(name)
	coll.Close()
	return prog, nil
}

// attachXDP attaches prog to ifindex through a BPF link in the mode asked
// for; "auto" tries native first and falls back to generic. It returns the
// mode that took and, when auto fell back, why native did not.
func attachXDP(prog *ebpf.Program, ifindex int, want string) (link.Link, string, error, error) {
	type try struct {
		flags link.XDPAttachFlags
		mode  string
	}
	var tries []try
	switch want {
	case XDPNative:
		tries = []try{{link.XDPDriverMode, XDPNative}}
	case XDPGeneric:
		tries = []try{{link.XDPGenericMode, XDPGeneric}}
	case XDPAuto, "":
		tries = []try{{link.XDPDriverMode, XDPNative}, {link.XDPGenericMode, XDPGeneric}}
	default:
		return nil, "", nil, fmt.Errorf("unknown XDP mode %q, want auto, native or generic", want)
	}
	var errs []error
	for _, t := range tries {
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: t.flags})
		if err == nil {
			return l, t.mode, errors.Join(errs...), nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", t.mode, err))
	}
	err := errors.Join(errs...)
	if strings.Contains(err.Error(), "device or resource busy") {
		err = fmt.Errorf("%w (another XDP program is attached outside ncpos; `ip link set dev IF xdp off` removes it)", err)
	}
	return nil, "", nil, err
}

func newXDPEngine(ports []*port, opts *Options) (_ *xdpEngine, err error) {
	spec, err := datapathSpec()
	if err != nil {
		return nil, err
	}
	e := &xdpEngine{spec: spec, progName: bpf.DatapathProgPortForward,
		progs: map[int]*ebpf.Program{}, progIDs: map[int]uint32{}, links: map[int]link.Link{}, modes: map[int]string{}, gens: map[int]uint64{}}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.egress, err = newSharedMap(spec, bpf.DatapathMapEgress, 0); err != nil {
		return nil, err
	}
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
	e.maps = e.capture.add(e.lldp.add(map[string]*ebpf.Map{bpf.DatapathMapEgress: e.egress, bpf.DatapathMapPortCounts: e.counts}))
	if opts.Mode == ModeService {
		if e.flows, err = newFlowTable(spec, opts.FlowTableSize, opts.FlowIdle); err != nil {
			return nil, err
		}
		e.maps[bpf.DatapathMapFlows] = e.flows.m
		e.maps[bpf.DatapathMapFlowCounts] = e.flows.counts
		e.maps[bpf.DatapathMapFlowClock] = e.flows.clock
		e.progName = bpf.DatapathProgPortService
	}
	// Without the counters the segments still forward; what the kernel
	// then drops is still seen as egress_lost.
	if e.redirects, err = newRedirectCounters(spec, e.counts); err != nil {
		e.note = err.Error()
		opts.Logf("%v", err)
		err = nil
	}
	progs, err := e.loadPorts(ports, opts)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(ports); i += 2 {
		if err := e.attachLoaded(ports[i:i+2], progs[i:i+2], opts); err != nil {
			for _, p := range progs[i+2:] {
				p.Close()
			}
			return nil, err
		}
	}
	return e, nil
}

// loadPorts loads the programs of ports side by side.
func (e *xdpEngine) loadPorts(ports []*port, opts *Options) ([]*ebpf.Program, error) {
	return loadPrograms(len(ports), func(i int) (*ebpf.Program, error) {
		p := ports[i]
		prog, err := loadPortProgram(e.spec, e.progName, p.slot, p.segment.MTU, e.maps, opts.NoCapture)
		if err != nil {
			return nil, fmt.Errorf("port %s (%s): %w", p.label, p.ifname, err)
		}
		return prog, nil
	})
}

// attachPair attaches a segment's two ports, each with its own program
// instance in its slot, redirecting to the other: the segment forwards
// once both are attached. Nothing of the pair stays attached when it
// fails. Other segments' programs and map entries are not touched.
func (e *xdpEngine) attachPair(a, b *port, opts *Options) error {
	pair := []*port{a, b}
	progs, err := e.loadPorts(pair, opts)
	if err != nil {
		return err
	}
	return e.attachLoaded(pair, progs, opts)
}

// attachLoaded attaches a segment's two ports with their programs, which
// it owns from then on.
func (e *xdpEngine) attachLoaded(pair []*port, progs []*ebpf.Program, opts *Options) (err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer func() {
		if err != nil {
			err = errors.Join(err, e.detachPairLocked(pair[0], pair[1]))
		}
	}()
	for i, p := range pair {
		e.progs[p.slot] = progs[i]
	}
	zero := make([]bpf.DatapathPortStats, ebpf.MustPossibleCPU())
	for _, p := range pair {
		prog := e.progs[p.slot]
		info, err := prog.Info()
		if err != nil {
			return fmt.Errorf("forwarder: program of %s: %w", p.ifname, err)
		}
		id, _ := info.ID()
		e.progIDs[p.slot] = uint32(id)
		// A slot a removed segment used starts again from nothing.
		if err := e.counts.Put(uint32(p.slot), zero); err != nil {
			return fmt.Errorf("forwarder: counters of %s: %w", p.ifname, err)
		}
		if err := e.egress.Put(uint32(p.slot), uint32(p.peer.ifindex)); err != nil {
			return fmt.Errorf("forwarder: egress slot of %s: %w", p.ifname, err)
		}
	}
	if err := planPorts(pair, opts.XDPMode); err != nil {
		return err
	}
	for _, p := range pair {
		want := p.plan
		if want == XDPNative && opts.XDPMode != XDPNative {
			// Native as the features promise; a driver may still refuse
			// (e1000e at an MTU it cannot receive in one buffer, or a
			// peer's promise not kept): generic then, and why.
			want = XDPAuto
		}
		l, mode, refused, err := attachXDP(e.progs[p.slot], p.ifindex, want)
		if err != nil {
			return fmt.Errorf("forwarder: attaching XDP to %s: %w", p.ifname, err)
		}
		if p.plan == XDPNative && mode != XDPNative {
			// The kernel keeps the driver's own words from a BPF
			// link's attach; the MTU is what drivers refuse most.
			p.plan, p.attachWhy, p.checkPeer = mode, fmt.Sprintf("its driver refused the native attach at MTU %d (%v)", p.segment.MTU, refused), false
		}
		e.links[p.slot] = l
		e.modes[p.slot] = mode
		e.gens[p.slot]++
		if e.redirects != nil {
			if err := e.redirects.add(e.progIDs[p.slot], uint32(p.slot)); err != nil {
				return fmt.Errorf("forwarder: redirect counters of %s: %w", p.ifname, err)
			}
		}
	}
	return e.keepPromises(pair, opts.XDPMode)
}

// detachPair detaches a segment's ports and frees their slots: from then
// on frames entering them go to the kernel's stack, which the data
// port's fence drops.
func (e *xdpEngine) detachPair(a, b *port) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.detachPairLocked(a, b)
}

func (e *xdpEngine) detachPairLocked(a, b *port) error {
	var errs []error
	for _, p := range []*port{a, b} {
		// A capture of the port ends; the port the slot goes to next
		// must not feed it meanwhile.
		errs = append(errs, e.capture.clear(p.slot))
		if l := e.links[p.slot]; l != nil {
			errs = append(errs, l.Close())
		}
		if e.redirects != nil {
			e.redirects.remove(e.progIDs[p.slot])
		}
		if prog := e.progs[p.slot]; prog != nil {
			errs = append(errs, prog.Close())
		}
		if err := e.egress.Delete(uint32(p.slot)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("forwarder: egress slot of %s: %w", p.ifname, err))
		}
		delete(e.links, p.slot)
		delete(e.progs, p.slot)
		delete(e.progIDs, p.slot)
		delete(e.modes, p.slot)
	}
	return errors.Join(errs...)
}

// planPorts chooses each port's attach mode from its and its peer's XDP
// features (see planAttach).
func planPorts(ports []*port, want string) error {
	for _, p := range ports {
		f, known, err := readXDPFeatures(p.ifindex)
		if err != nil {
			return fmt.Errorf("forwarder: port %s (%s): %w", p.label, p.ifname, err)
		}
		p.features, p.known = f, known
	}
	// A peer's promise is taken only from a peer that is itself to run
	// native; a port that loses its promise may take another's with it.
	trust := map[*port]bool{}
	for _, p := range ports {
		trust[p] = true
	}
	for changed := true; changed; {
		changed = false
		for _, p := range ports {
			plan, err := planAttach(want, p.features, p.peer.features, p.known && p.peer.known, p.peer.label, p.segment.MTU > singleBufferMTU, trust[p])
			if err != nil {
				return fmt.Errorf("forwarder: port %s (%s) of segment %s %w", p.label, p.ifname, p.segment.Name, err)
			}
			p.plan, p.attachWhy, p.checkPeer = plan.mode, plan.why, plan.checkPeer
		}
		for _, p := range ports {
			if p.checkPeer && p.peer.plan != XDPNative {
				trust[p], changed = false, true
			}
		}
	}
	return nil
}

// keepPromises checks the directions of a freshly attached pair that were
// planned native on the peer's promise (see attachPlan.checkPeer), now
// that the peer's program is attached, and runs generic those whose peer
// still cannot transmit redirected frames (or fails, if native was asked).
// The features /status shows are read again: a driver's change with its
// program.
func (e *xdpEngine) keepPromises(pair []*port, want string) error {
	// Every native direction is checked, the promised ones and the others:
	// a port moved to generic takes its transmit with it (igb, ixgbe), so
	// its peer's direction is checked again.
	for changed := true; changed; {
		changed = false
		for _, p := range pair {
			// Flags that cannot be read now judge nothing: the ones
			// read before attaching would wrong a promised peer.
			f, known, err := readXDPFeatures(p.ifindex)
			p.features, p.known = f, known && err == nil
		}
		for _, p := range pair {
			if e.modes[p.slot] != XDPNative || !p.known || !p.peer.known {
				continue
			}
			ok, why := peerKept(p.peer.features, p.peer.label, p.segment.MTU > singleBufferMTU)
			if ok {
				continue
			}
			if e.modes[p.peer.slot] != XDPNative {
				why = fmt.Sprintf("the peer %s runs generic (%s), so it cannot transmit redirected frames", p.peer.label, p.peer.attachWhy)
			}
			if want == XDPNative {
				return fmt.Errorf("forwarder: port %s (%s) of segment %s cannot run natively: %s (use xdp mode auto or generic)", p.label, p.ifname, p.segment.Name, why)
			}
			if err := e.links[p.slot].Close(); err != nil {
				return fmt.Errorf("forwarder: detaching the native program of %s: %w", p.ifname, err)
			}
			delete(e.links, p.slot)
			l, mode, _, err := attachXDP(e.progs[p.slot], p.ifindex, XDPGeneric)
			if err != nil {
				return fmt.Errorf("forwarder: attaching XDP to %s: %w", p.ifname, err)
			}
			e.links[p.slot], e.modes[p.slot] = l, mode
			p.plan, p.attachWhy, p.checkPeer = XDPGeneric, why, false
			changed = true
		}
	}
	for _, p := range pair {
		if p.checkPeer {
			p.attachWhy += " (the peer's transmit once its program was attached)"
			p.checkPeer = false
		}
	}
	return nil
}

// singleBufferMTU is about the largest MTU at which drivers still hand XDP
// a frame in one buffer (a 4 KiB page less headroom and the skb's shared
// info: 3506 on veth); above it, frames arrive in several.
const singleBufferMTU = 3500

func (e *xdpEngine) attachMode(p *port) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.modes[p.slot]
}

func (e *xdpEngine) hook(p *port) (*captureMaps, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.links[p.slot] == nil || e.noCapture {
		return nil, 0
	}
	return e.capture, e.gens[p.slot]
}

func (e *xdpEngine) flowTable() flowSource {
	if e.flows == nil {
		return nil
	}
	return e.flows
}

func (e *xdpEngine) counters(ports []*port) ([]portCounters, error) {
	return readPortCounts(e.counts, ports)
}

// readPortCounts sums the per-CPU counters of the ports' slots.
func readPortCounts(m *ebpf.Map, ports []*port) ([]portCounters, error) {
	out := make([]portCounters, len(ports))
	var percpu []bpf.DatapathPortStats
	for i, p := range ports {
		if err := m.Lookup(uint32(p.slot), &percpu); err != nil {
			return nil, fmt.Errorf("forwarder: reading counters of port %s: %w", p.label, err)
		}
		for _, s := range percpu {
			out[i].add(s)
		}
	}
	return out, nil
}

func (e *xdpEngine) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	// Links first, so that no frame meets a half-torn-down datapath.
	for _, l := range e.links {
		errs = append(errs, l.Close())
	}
	for _, p := range e.progs {
		errs = append(errs, p.Close())
	}
	if e.redirects != nil {
		errs = append(errs, e.redirects.close())
	}
	if e.flows != nil {
		errs = append(errs, e.flows.close())
	}
	errs = append(errs, e.lldp.close())
	errs = append(errs, e.capture.close())
	for _, m := range []*ebpf.Map{e.egress, e.counts} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

func (e *xdpEngine) err() error { return nil }
