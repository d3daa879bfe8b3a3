package forwarder

import (
	"fmt"
	"strings"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/dataport"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/lldp"
)

// maxFrame is the longest frame (FCS not counted) that enters p and
// leaves its peer; both ports have the segment's MTU.
func maxFrame(engine string, p *port) int {
	mtu := p.segment.MTU
	if engine == EngineAFXDP {
		mtu = min(mtu, config.AFXDPMaxMTU)
	}
	return mtu + config.FrameOverhead
}

func (p *port) featureNames() []string {
	if !p.known {
		return nil
	}
	return p.features.Names()
}

// drops merges the datapath's drop counters with the kernel's and the
// derived egress losses.
func drops(pc portCounters, ls linkStats, lost int64) []uint64 {
	d := pc.Drops
	d[dropKernelRx] += ls.rxDropped
	d[dropKernelTx] += ls.txDropped
	d[dropEgressLost] += uint64(max(lost, 0))
	return d[:]
}

// Status reports everything the forwarder knows, from the latest sample.
func (f *Forwarder) Status() forwarderapi.Status {
	f.mu.Lock()
	s := f.sample
	hb := f.heartbeat
	ports, segs, absent, eng, cores, notes := f.ports, f.opts.Segments, f.opts.Absent, f.eng, f.cores, f.notes
	engine, mode := f.opts.Engine, f.opts.Mode
	f.mu.Unlock()
	live, conds := f.check(time.Now())
	st := forwarderapi.Status{
		Engine: engine, Mode: mode,
		Started: f.started.UTC(), Heartbeat: hb.UTC(),
		Live: live, Conditions: conds,
		Cores: cores, Notes: notes,
	}
	segConds := func(name string) []health.Condition {
		out := []health.Condition{}
		for _, c := range conds {
			if c.Segment == name {
				out = append(out, c)
			}
		}
		return out
	}
	heard := f.lldp.table.Neighbors(time.Now())
	for i, p := range ports {
		if i >= len(s.ports) {
			break // segments added since the sample: in the next one
		}
		pc, ls := s.ports[i], s.links[i]
		nbs, rejected, why, dropped := f.lldp.of(p.label, heard)
		st.Ports = append(st.Ports, forwarderapi.PortStatus{
			Name: p.label, Interface: p.ifname, Segment: p.segment.Name, Peer: p.peer.label,
			Attach: eng.attachMode(p), Link: ls.operState,
			RxPackets: pc.RxPackets, RxBytes: pc.RxBytes, Passed: pc.Passed,
			TxPackets: ls.txPackets, TxBytes: ls.txBytes,
			Drops:     reasonMap(DropReasons, drops(pc, ls, s.lost[i])),
			Malformed: pc.Malformed, MalformedReasons: reasonMap(MalformedReasons, pc.Reasons[:]),
			MTU: p.segment.MTU, MaxFrame: maxFrame(engine, p),
			XDPFeatures: p.featureNames(), AttachWhy: p.attachWhy,
			Settings:  portSettings(p.settings),
			Neighbors: wireNeighbors(nbs), LLDPRejected: rejected, LLDPLastError: why, LLDPDropped: dropped,
		})
	}
	for i := range segs {
		seg := &segs[i]
		if 2*i+1 >= len(s.ports) {
			break
		}
		var sum portCounters
		var fwd uint64
		var kd [numDrops]uint64
		for side := 0; side < 2; side++ {
			pc, ls := s.ports[2*i+side], s.links[2*i+side]
			sum.merge(&pc)
			fwd += ls.txPackets
			for j, n := range drops(pc, ls, s.lost[2*i+side]) {
				kd[j] += n
			}
		}
		ss := forwarderapi.SegmentStatus{
			Name: seg.Name, Ports: seg.Labels,
			Packets: sum.RxPackets, Bytes: sum.RxBytes, Forwarded: fwd,
			Drops:     reasonMap(DropReasons, kd[:]),
			Malformed: sum.Malformed, MalformedReasons: reasonMap(MalformedReasons, sum.Reasons[:]),
			Conditions: segConds(seg.Name),
		}
		ss.Forwarding = len(ss.Conditions) == 0
		st.Segments = append(st.Segments, ss)
	}
	for _, a := range absent {
		st.Segments = append(st.Segments, forwarderapi.SegmentStatus{Name: a.Name, Ports: a.Labels, Conditions: segConds(a.Name)})
	}
	if ft := eng.flowTable(); ft != nil {
		fs := ft.Stats()
		for j := range fs.Top {
			for _, p := range ports {
				if p.slot == int(fs.Top[j].Port) {
					fs.Top[j].Segment = p.segment.Name
					fs.Top[j].In = p.label
				}
			}
		}
		st.Flows = &fs
	}
	return st
}

// Report is forwarderd's health.Report: its liveness and the conditions of
// its segments.
func (f *Forwarder) Report() health.Report {
	live, conds := f.check(time.Now())
	r := health.Report{Daemon: "forwarderd", Live: live, Conditions: conds}
	f.mu.Lock()
	segs := f.opts.Segments
	f.mu.Unlock()
	for _, s := range segs {
		r.Segments = append(r.Segments, s.Name)
	}
	return r
}

// check works out liveness and the segments' conditions at now.
//
// Liveness is what a restart or a reset can mend: the sampling loop's
// heartbeat, the BPF maps, the engine (AF_XDP workers looping) and the
// programs it attached. A port whose link is down, a port the box lacks
// and a direction where frames enter and none leave (the far end pausing
// the port, a stuck transmit queue) are conditions of the segment: bypassd
// acts on them, the watchdog never does.
func (f *Forwarder) check(now time.Time) (health.Liveness, []health.Condition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var problems []health.Problem
	if age := now.Sub(f.heartbeat); age > 3*f.opts.Interval {
		problems = append(problems, health.Problem{Kind: health.HeartbeatStale,
			Detail: fmt.Sprintf("last heartbeat %v ago", age.Round(time.Millisecond))})
	}
	if f.sampleErr != nil {
		problems = append(problems, health.Problem{Kind: health.CountersUnreadable, Detail: f.sampleErr.Error()})
	}
	if err := f.eng.err(); err != nil {
		problems = append(problems, health.Problem{Kind: health.EngineFailed, Detail: err.Error()})
	}
	var conds []health.Condition
	for i, p := range f.ports {
		if i >= len(f.sample.links) {
			continue
		}
		ls := f.sample.links[i]
		if ls.missing {
			// A NIC gone from the bus is what a card does: a condition.
			conds = append(conds, health.Condition{Kind: health.PortAbsent, Segment: p.segment.Name, Port: p.label,
				Detail: fmt.Sprintf("port %s (%s) is gone: %s", p.label, p.ifname, ls.operState)})
			continue
		}
		if ls.xdpProg == 0 {
			problems = append(problems, health.Problem{Kind: health.ProgramDetached,
				Detail: fmt.Sprintf("port %s (%s) has no XDP program attached", p.label, p.ifname)})
		}
		if !ls.up {
			conds = append(conds, health.Condition{Kind: health.LinkDown, Segment: p.segment.Name, Port: p.label,
				Detail: fmt.Sprintf("port %s (%s) link %s", p.label, p.ifname, ls.operState)})
		}
		if strips := dataport.Strips(p.settings); len(strips) > 0 {
			// Frames would leave without the tags the NIC took: not a
			// wire. The relay's bypass is.
			conds = append(conds, health.Condition{Kind: health.VLANStripped, Segment: p.segment.Name, Port: p.label,
				Detail: fmt.Sprintf("port %s (%s): the driver keeps %s on, so VLAN tags would be lost", p.label, p.ifname, strings.Join(strips, ", "))})
		}
	}
	conds = append(conds, progressProblems(f.ports, f.history, f.opts.ProgressWindow)...)
	for _, a := range f.opts.Absent {
		for _, label := range a.Missing {
			conds = append(conds, health.Condition{Kind: health.PortAbsent, Segment: a.Name, Port: label,
				Detail: fmt.Sprintf("port %s of segment %s is not on this box: %s", label, a.Name, a.Why)})
		}
	}
	return health.Live(f.heartbeat, problems...), f.conds.Update(now, conds)
}

// progressProblems finds directions where frames entered a port during the
// window but none left its peer: the segment forwards nothing that way,
// whether the peer's transmit is stalled, the kernel refuses every
// redirect, the egress slot is empty or the driver drops every frame on
// receive. Under overload some frames are lost, which is not a stall; only
// "none at all" is.
//
// Both sides count the same frames. What entered is what the datapath
// handed on, less frames no working peer would send either: those longer
// than its MTU allows, which the kernel refuses after the program, and
// malformed frames, as a NIC that parses headers on transmit may drop a
// frame whose headers are cut off without counting it (QEMU's 82574L
// does). Such frames prove nothing about the peer's queue.
//
// And both sides are read at the same moments, though a driver counts a
// frame as sent some time after it took it: some refresh their counters
// from the hardware periodically, and virtio-net counts a frame only when
// it reclaims the buffer, at its next transmit. So a frame handed on after
// the second-newest sample is not yet expected in the peer's counter, and
// frames must have been handed on in at least two sampling intervals: the
// second transmit makes such a driver count the first.
func progressProblems(ports []*port, history []sample, window time.Duration) []health.Condition {
	if len(history) < 2 {
		return nil
	}
	first, seen, last := history[0], history[len(history)-2], history[len(history)-1]
	if last.at.Sub(first.at) < window {
		return nil
	}
	var out []health.Condition
	for i, p := range ports {
		if i >= len(first.ports) || p.peer.pos >= len(first.links) {
			continue
		}
		in := stallEvidence(&seen, i) - stallEvidence(&first, i)
		out0, out1 := first.links[p.peer.pos].txPackets, last.links[p.peer.pos].txPackets
		if out1 < out0 {
			continue // the driver reset its counters: no verdict this window
		}
		if in > 0 && out1 == out0 && intervalsWith(history[:len(history)-1], i) >= 2 {
			out = append(out, health.Condition{Kind: health.TxStalled, Segment: p.segment.Name, Port: p.peer.label,
				Detail: fmt.Sprintf("%d frames entered %s in the last %v, none left %s",
					in, p.label, last.at.Sub(first.at).Round(time.Second), p.peer.label)})
		}
	}
	return out
}

// intervalsWith counts the intervals between samples in which port i
// handed frames on that its peer must count.
func intervalsWith(history []sample, i int) int {
	n := 0
	for k := 1; k < len(history); k++ {
		if stallEvidence(&history[k], i) > stallEvidence(&history[k-1], i) {
			n++
		}
	}
	return n
}

// stallEvidence is what entered port i that a working segment must send
// out of the peer, in sample s: what the datapath handed on, what it could
// not because the egress slot was empty, and what the driver dropped on
// receive. Frames the peer's driver refused (a full ring) or the kernel
// refused after the program stay in: a segment that sends none of them
// forwards nothing. Malformed frames are subtracted, so it may
// undercount, never overcount.
func stallEvidence(s *sample, i int) int64 {
	c := &s.ports[i]
	n := int64(c.Passed) + int64(c.Drops[dropNoPeer]) - int64(c.Malformed) - int64(c.Drops[dropRedirectTooBig])
	if i < len(s.links) {
		n += int64(s.links[i].rxDropped)
	}
	return n
}

// portSettings are a port's settings as forwarderd reports them.
func portSettings(ss []dataport.Setting) []forwarderapi.PortSetting {
	if ss == nil {
		return nil
	}
	out := make([]forwarderapi.PortSetting, len(ss))
	for i, s := range ss {
		out[i] = forwarderapi.PortSetting(s)
	}
	return out
}

// wireNeighbors are a port's LLDP neighbours as forwarderd reports them.
func wireNeighbors(seen []lldp.Seen) []forwarderapi.Neighbor {
	if seen == nil {
		return nil
	}
	out := make([]forwarderapi.Neighbor, len(seen))
	for i, s := range seen {
		n := s.Neighbor
		out[i] = forwarderapi.Neighbor{Port: s.Port, Index: s.Index, ChassisID: n.ChassisID, ChassisIDSubtype: n.ChassisIDSubtype,
			PortID: n.PortID, PortIDSubtype: n.PortIDSubtype, TTL: n.TTL, PortDescription: n.PortDescription,
			SystemName: n.SystemName, SystemDescription: n.SystemDescription, ManagementAddress: n.ManagementAddress,
			LastSeen: s.LastSeen, Expires: s.Expires}
	}
	return out
}
