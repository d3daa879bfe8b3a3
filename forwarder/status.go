package forwarder

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is forwarderd's /status.
type Status struct {
	Engine    string          `json:"engine"`
	Mode      string          `json:"mode"`
	Started   time.Time       `json:"started"`
	Heartbeat time.Time       `json:"heartbeat"`
	Healthy   bool            `json:"healthy"`
	Problems  []string        `json:"problems,omitempty"`
	Cores     CorePlan        `json:"cores"`
	Segments  []SegmentStatus `json:"segments"`
	Ports     []PortStatus    `json:"ports"`
	Flows     *FlowStats      `json:"flows,omitempty"`
}

// PortStatus is one port: what entered it (datapath counters) and what
// left it (the kernel's interface counters).
type PortStatus struct {
	Name      string `json:"name"` // front-panel label
	Interface string `json:"interface"`
	Segment   string `json:"segment"`
	Peer      string `json:"peer"`
	Attach    string `json:"attach"` // xdp: native|generic; afxdp: zerocopy|copy
	Link      string `json:"link"`

	RxPackets uint64 `json:"rx_packets"` // entered the datapath here
	RxBytes   uint64 `json:"rx_bytes"`
	Passed    uint64 `json:"passed"`     // handed on towards the peer
	TxPackets uint64 `json:"tx_packets"` // left through this port (kernel)
	TxBytes   uint64 `json:"tx_bytes"`

	Drops            map[string]uint64 `json:"drops"`
	Malformed        uint64            `json:"malformed"`
	MalformedReasons map[string]uint64 `json:"malformed_reasons"`
}

// SegmentStatus sums a segment's two ports.
type SegmentStatus struct {
	Name             string            `json:"name"`
	Ports            [2]string         `json:"ports"`
	Packets          uint64            `json:"packets"` // entered, both directions
	Bytes            uint64            `json:"bytes"`
	Forwarded        uint64            `json:"forwarded"` // left, both directions
	Drops            map[string]uint64 `json:"drops"`
	Malformed        uint64            `json:"malformed"`
	MalformedReasons map[string]uint64 `json:"malformed_reasons"`
	Healthy          bool              `json:"healthy"`
	Problem          string            `json:"problem,omitempty"`
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
func (f *Forwarder) Status() Status {
	f.mu.Lock()
	s := f.sample
	hb := f.heartbeat
	f.mu.Unlock()
	problems, segProblems := f.check(time.Now())
	st := Status{
		Engine: f.opts.Engine, Mode: f.opts.Mode,
		Started: f.started.UTC(), Heartbeat: hb.UTC(),
		Healthy: len(problems) == 0, Problems: problems,
		Cores: f.cores,
	}
	for i, p := range f.ports {
		pc, ls := s.ports[i], s.links[i]
		st.Ports = append(st.Ports, PortStatus{
			Name: p.label, Interface: p.ifname, Segment: p.segment.Name, Peer: p.peer.label,
			Attach: f.eng.attachMode(i), Link: ls.operState,
			RxPackets: pc.RxPackets, RxBytes: pc.RxBytes, Passed: pc.Passed,
			TxPackets: ls.txPackets, TxBytes: ls.txBytes,
			Drops:     reasonMap(DropReasons, drops(pc, ls, s.lost[i])),
			Malformed: pc.Malformed, MalformedReasons: reasonMap(MalformedReasons, pc.Reasons[:]),
		})
	}
	for i := range f.opts.Segments {
		seg := &f.opts.Segments[i]
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
		ss := SegmentStatus{
			Name: seg.Name, Ports: seg.Labels,
			Packets: sum.RxPackets, Bytes: sum.RxBytes, Forwarded: fwd,
			Drops:     reasonMap(DropReasons, kd[:]),
			Malformed: sum.Malformed, MalformedReasons: reasonMap(MalformedReasons, sum.Reasons[:]),
			Healthy: segProblems[seg.Name] == "",
			Problem: segProblems[seg.Name],
		}
		st.Segments = append(st.Segments, ss)
	}
	if ft := f.eng.flowTable(); ft != nil {
		fs := ft.Stats()
		for j := range fs.Top {
			if p := int(fs.Top[j].Port); p < len(f.ports) {
				fs.Top[j].Segment = f.ports[p].segment.Name
				fs.Top[j].In = f.ports[p].label
			}
		}
		st.Flows = &fs
	}
	return st
}

// Health is /healthz: nil while the heartbeat is fresh, the engine is
// sound, every port's link is up and every segment passes what enters it.
func (f *Forwarder) Health() error {
	problems, _ := f.check(time.Now())
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// check works out the health verdict at now: problems overall, and the
// problem of each segment by name.
func (f *Forwarder) check(now time.Time) ([]string, map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var problems []string
	segProblems := map[string]string{}
	if age := now.Sub(f.heartbeat); age > 3*f.opts.Interval {
		problems = append(problems, fmt.Sprintf("heartbeat stale: last %v ago", age.Round(time.Millisecond)))
	}
	if f.sampleErr != nil {
		problems = append(problems, "counters unreadable: "+f.sampleErr.Error())
	}
	if err := f.eng.err(); err != nil {
		problems = append(problems, "datapath: "+err.Error())
	}
	for i, p := range f.ports {
		if i < len(f.sample.links) && !f.sample.links[i].up {
			msg := fmt.Sprintf("port %s (%s) link %s", p.label, p.ifname, f.sample.links[i].operState)
			problems = append(problems, msg)
			addProblem(segProblems, p.segment.Name, msg)
		}
	}
	for _, msg := range progressProblems(f.ports, f.history, f.opts.ProgressWindow) {
		problems = append(problems, msg.text)
		addProblem(segProblems, msg.segment, msg.text)
	}
	return problems, segProblems
}

func addProblem(m map[string]string, seg, msg string) {
	if m[seg] != "" {
		m[seg] += "; "
	}
	m[seg] += msg
}

type segmentProblem struct{ segment, text string }

// progressProblems finds directions where frames entered a port during the
// window but none left its peer: the datapath is stuck. Under overload some
// frames are lost, which is not a stall; only "none at all" is.
func progressProblems(ports []*port, history []sample, window time.Duration) []segmentProblem {
	if len(history) < 2 {
		return nil
	}
	first, last := history[0], history[len(history)-1]
	if last.at.Sub(first.at) < window {
		return nil
	}
	var out []segmentProblem
	for i, p := range ports {
		if i >= len(first.ports) || p.peer.index >= len(first.links) {
			continue
		}
		in := last.ports[i].Passed - first.ports[i].Passed
		out0, out1 := first.links[p.peer.index].txPackets, last.links[p.peer.index].txPackets
		if out1 < out0 {
			continue // the driver reset its counters: no verdict this window
		}
		if in > 0 && out1 == out0 {
			out = append(out, segmentProblem{p.segment.Name, fmt.Sprintf(
				"segment %s: %d frames entered %s in the last %v, none left %s",
				p.segment.Name, in, p.label, last.at.Sub(first.at).Round(time.Second), p.peer.label)})
		}
	}
	return out
}
