package forwarder

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
)

// Reconfigure takes a new set of segments, and settings of the whole
// forwarder, without a restart of the process. A segment whose name,
// ports and MTU are unchanged is kept as it is: its programs stay
// attached, its map entries and counters untouched, so it loses no frame.
// A removed segment is detached; a new one is attached in free slots; a
// changed one is detached and attached again. A change to a setting of the
// whole forwarder (engine, mode, cores, the flow table, the attach mode,
// flow control), or any change under an engine that takes segments only
// at start (afxdp), starts the engine anew: every segment is re-attached.
//
// next's sampling settings (Root, Interval, SweepInterval, ProgressWindow,
// Logf) are the running forwarder's, and so is where LLDP frames go. A segment that cannot be attached is
// reported as not bridged, with why, and the error says so; the others
// are taken all the same.
func (f *Forwarder) Reconfigure(next Options) (forwarderapi.Reconfigured, error) {
	start := time.Now()
	f.change.Lock()
	defer f.change.Unlock()
	next.Root, next.Interval, next.SweepInterval, next.ProgressWindow, next.Logf, next.lldpTake =
		f.opts.Root, f.opts.Interval, f.opts.SweepInterval, f.opts.ProgressWindow, f.opts.Logf, f.opts.lldpTake
	next.Segments = slices.Clone(next.Segments)
	if err := next.setDefaults(); err != nil {
		return forwarderapi.Reconfigured{}, err
	}
	var r forwarderapi.Reconfigured
	var err error
	x, perSegment := f.eng.(*xdpEngine)
	if !perSegment || f.wideChange(&next) {
		r, err = f.restart(next)
	} else {
		r, err = f.resegment(x, next)
	}
	r.TookMS = float64(time.Since(start).Microseconds()) / 1000
	return r, err
}

// wideChange says whether next changes a setting of the whole forwarder.
func (f *Forwarder) wideChange(next *Options) bool {
	o := &f.opts
	return o.Engine != next.Engine || o.Mode != next.Mode || o.Cores != next.Cores ||
		o.FlowTableSize != next.FlowTableSize || o.FlowIdle != next.FlowIdle ||
		o.XDPMode != next.XDPMode || o.FlowControl != next.FlowControl
}

// restart detaches every segment and starts the engine anew over next's.
// When that fails nothing is bridged, and every segment says why.
func (f *Forwarder) restart(next Options) (forwarderapi.Reconfigured, error) {
	var r forwarderapi.Reconfigured
	r.Restarted = true
	for _, s := range f.opts.Segments {
		r.Detached = append(r.Detached, s.Name)
	}
	closeErr := f.eng.close()
	var (
		ports []*port
		cores forwarderapi.CorePlan
		eng   engine = idleEngine{}
		err   error
	)
	if len(next.Segments) > 0 {
		if ports, cores, eng, err = startEngine(&next); err != nil {
			r.Failed = map[string]string{}
			for _, s := range next.Segments {
				r.Failed[s.Name] = err.Error()
				next.Absent = append(next.Absent, AbsentSegment{Name: s.Name, Labels: s.Labels, Missing: s.Labels[:], Why: "not attached: " + err.Error()})
			}
			next.Segments, ports, eng = nil, nil, idleEngine{}
		}
	}
	for _, s := range next.Segments {
		r.Attached = append(r.Attached, s.Name)
	}
	notes := engineNotes(eng)
	base, baseErr := baseline(eng, ports)
	f.mu.Lock()
	f.opts.Engine, f.opts.Mode, f.opts.Cores, f.opts.FlowTableSize = next.Engine, next.Mode, next.Cores, next.FlowTableSize
	f.opts.FlowIdle, f.opts.XDPMode, f.opts.FlowControl = next.FlowIdle, next.XDPMode, next.FlowControl
	f.opts.Segments, f.opts.Absent = next.Segments, next.Absent
	f.ports, f.cores, f.eng, f.notes = ports, cores, eng, notes
	f.lldp.setPorts(ports)
	// Every port starts afresh: the history is the baseline alone.
	f.sample = base
	f.history = []sample{base}
	f.sampleErr = baseErr
	f.mu.Unlock()
	if err != nil {
		return r, fmt.Errorf("forwarder: starting the engine anew: %w", errors.Join(err, closeErr))
	}
	if closeErr != nil {
		f.opts.Logf("detaching the previous engine: %v", closeErr)
	}
	return r, baseErr
}

// resegment changes the xdp engine's segments one at a time: segments
// that are gone or changed are detached first (their ports and slots may
// be what a new one takes), then each segment of next is kept or
// attached in its order, and the cores and samples follow the new ports.
func (f *Forwarder) resegment(x *xdpEngine, next Options) (forwarderapi.Reconfigured, error) {
	var r forwarderapi.Reconfigured
	rs := f.keptSegments(next.Segments)
	errs := rs.detachGone(x, f.ports, &r)
	pairs, fresh, attachErrs := rs.attachNext(x, &next, &r)
	errs = append(errs, attachErrs...)
	segs, ports := layOut(pairs)
	cores := f.carryCores(ports, rs.kept, fresh, next.Cores)
	// The samples carry on for kept ports; a new port's history is its
	// reading now, so that nothing before it counts as its traffic.
	base, baseErr := baseline(x, ports)
	if baseErr != nil {
		errs = append(errs, baseErr)
	}
	from := rs.formerPositions(ports)
	f.mu.Lock()
	f.opts.Segments, f.opts.Absent = segs, next.Absent
	f.ports, f.cores = ports, cores
	f.lldp.setPorts(ports)
	if baseErr == nil {
		f.sample = remap(f.sample, from, base)
		for i := range f.history {
			f.history[i] = remap(f.history[i], from, base)
		}
	} else {
		// No reading to carry the samples over with: they start
		// anew, so that none is laid out for the old ports.
		f.sample, f.history, f.sampleErr = sample{}, nil, baseErr
	}
	f.mu.Unlock()
	return r, errors.Join(errs...)
}

// resegmentation is what a change of segments knows of the running ones.
type resegmentation struct {
	old  map[string]*port // a running segment's first port
	kept map[string]bool  // segments of next that run unchanged
	used map[int]bool     // slots of kept segments' ports
}

// keptSegments finds the segments of next that run unchanged.
func (f *Forwarder) keptSegments(next []Segment) *resegmentation {
	rs := &resegmentation{old: map[string]*port{}, kept: map[string]bool{}, used: map[int]bool{}}
	for i := 0; i < len(f.ports); i += 2 {
		rs.old[f.ports[i].segment.Name] = f.ports[i]
	}
	for _, s := range next {
		if a, ok := rs.old[s.Name]; ok && *a.segment == s {
			rs.kept[s.Name] = true
			rs.used[a.slot], rs.used[a.peer.slot] = true, true
		}
	}
	return rs
}

// detachGone detaches every running segment that is not kept.
func (rs *resegmentation) detachGone(x *xdpEngine, running []*port, r *forwarderapi.Reconfigured) []error {
	var errs []error
	for i := 0; i < len(running); i += 2 {
		a := running[i]
		if rs.kept[a.segment.Name] {
			continue
		}
		r.Detached = append(r.Detached, a.segment.Name)
		if err := x.detachPair(a, a.peer); err != nil {
			errs = append(errs, fmt.Errorf("segment %s: detaching: %w", a.segment.Name, err))
		}
	}
	return errs
}

// segmentPair is a bridged segment of next and its two ports.
type segmentPair struct {
	seg  Segment
	a, b *port
}

// attachNext goes through next's segments in order: a kept one carries
// on as it is (new port values over the same slots), any other is
// attached in the first free pair of slots. A segment that cannot be
// attached is left out, and next.Absent says why. fresh lists the
// interfaces of attached ports.
func (rs *resegmentation) attachNext(x *xdpEngine, next *Options, r *forwarderapi.Reconfigured) (pairs []segmentPair, fresh []string, errs []error) {
	for _, s := range next.Segments {
		if rs.kept[s.Name] {
			a0 := rs.old[s.Name]
			a, b := *a0, *a0.peer
			a.peer, b.peer = &b, &a
			pairs = append(pairs, segmentPair{s, &a, &b})
			r.Kept = append(r.Kept, s.Name)
			continue
		}
		slot := 0
		for rs.used[slot] || rs.used[slot+1] {
			slot += 2
		}
		seg := s
		a, b := newPair(&seg, slot)
		err := preparePort(a, next)
		if err == nil {
			err = preparePort(b, next)
		}
		if err == nil {
			err = x.attachPair(a, b, next)
		}
		if err != nil {
			if r.Failed == nil {
				r.Failed = map[string]string{}
			}
			r.Failed[s.Name] = err.Error()
			next.Absent = append(next.Absent, AbsentSegment{Name: s.Name, Labels: s.Labels, Missing: s.Labels[:], Why: "not attached: " + err.Error()})
			errs = append(errs, fmt.Errorf("segment %s: %w", s.Name, err))
			continue
		}
		rs.used[slot], rs.used[slot+1] = true, true
		pairs = append(pairs, segmentPair{s, a, b})
		r.Attached = append(r.Attached, s.Name)
		fresh = append(fresh, a.ifname, b.ifname)
	}
	return pairs, fresh, errs
}

// layOut gives the bridged segments, and their ports in the same order.
func layOut(pairs []segmentPair) ([]Segment, []*port) {
	segs := make([]Segment, len(pairs))
	var ports []*port
	for i := range pairs {
		segs[i] = pairs[i].seg
		a, b := pairs[i].a, pairs[i].b
		a.segment, b.segment = &segs[i], &segs[i]
		a.pos, b.pos = 2*i, 2*i+1
		ports = append(ports, a, b)
	}
	return segs, ports
}

// carryCores keeps the kept ports' queues on their cores and spreads
// the fresh ports' queues over cores.
func (f *Forwarder) carryCores(ports []*port, kept map[string]bool, fresh []string, cores int) forwarderapi.CorePlan {
	plan := f.cores
	plan.Ports = nil
	keptIf := map[string]bool{}
	for _, p := range ports {
		if kept[p.segment.Name] {
			keptIf[p.ifname] = true
		}
	}
	for _, pc := range f.cores.Ports {
		if keptIf[pc.Interface] {
			plan.Ports = append(plan.Ports, pc)
		}
	}
	if len(fresh) > 0 {
		assoc := &coreAssociator{root: f.opts.Root, channels: ethtoolChannels{}}
		plan.Ports = append(plan.Ports, assoc.Associate(fresh, cores).Ports...)
	}
	return plan
}

// formerPositions says where each port was in the running samples, or
// -1 for a new one.
func (rs *resegmentation) formerPositions(ports []*port) []int {
	from := make([]int, len(ports))
	for i, p := range ports {
		from[i] = -1
		if rs.kept[p.segment.Name] {
			a0 := rs.old[p.segment.Name]
			from[i] = a0.pos
			if p.slot == a0.peer.slot {
				from[i] = a0.peer.pos
			}
		}
	}
	return from
}

// baseline reads every port's counters now.
func baseline(eng engine, ports []*port) (sample, error) {
	pc, err := eng.counters(ports)
	if err != nil {
		return sample{}, err
	}
	s := sample{at: time.Now(), ports: pc, links: make([]linkStats, len(ports)), lost: make([]int64, len(ports))}
	for i, p := range ports {
		s.links[i] = readLink(p.ifindex)
	}
	return s, nil
}

// remap carries sample s over to a new set of ports: port i was at
// from[i] in s, or is new (-1) and takes its baseline reading.
func remap(s sample, from []int, base sample) sample {
	out := sample{at: s.at, ports: make([]portCounters, len(from)), links: make([]linkStats, len(from))}
	if s.lost != nil {
		out.lost = make([]int64, len(from))
	}
	for i, j := range from {
		if j < 0 || j >= len(s.ports) {
			out.ports[i], out.links[i] = base.ports[i], base.links[i]
			continue
		}
		out.ports[i], out.links[i] = s.ports[j], s.links[j]
		if s.lost != nil {
			out.lost[i] = s.lost[j]
		}
	}
	return out
}
