package forwarder

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc/health"
)

func TestProgressProblems(t *testing.T) {
	seg := &Segment{Name: "seg1", Labels: [2]string{"LAN1", "LAN2"}}
	a := &port{pos: 0, segment: seg, label: "LAN1"}
	b := &port{pos: 1, slot: 1, segment: seg, label: "LAN2"}
	a.peer, b.peer = b, a
	ports := []*port{a, b}
	at := time.Unix(1000, 0)
	mk := func(sec int, passedA, passedB, txA, txB uint64) sample {
		return sample{
			at:    at.Add(time.Duration(sec) * time.Second),
			ports: []portCounters{{Passed: passedA}, {Passed: passedB}},
			links: []linkStats{{txPackets: txA}, {txPackets: txB}},
		}
	}
	// malformed marks n of port A's passed frames malformed.
	malformed := func(s sample, n uint64) sample {
		s.ports = []portCounters{s.ports[0], s.ports[1]}
		s.ports[0].Malformed = n
		return s
	}
	// refused counts n of port A's passed frames as refused after the
	// program, for a reason.
	refused := func(s sample, reason int, n uint64) sample {
		s.ports = []portCounters{s.ports[0], s.ports[1]}
		s.ports[0].Drops[reason] = n
		return s
	}
	// txDropped has port B's driver count n frames dropped on transmit.
	txDropped := func(s sample, n uint64) sample {
		s.links = []linkStats{s.links[0], s.links[1]}
		s.links[1].txDropped = n
		return s
	}
	// rxDropped has port A's driver count n frames dropped on receive.
	rxDropped := func(s sample, n uint64) sample {
		s.links = []linkStats{s.links[0], s.links[1]}
		s.links[0].rxDropped = n
		return s
	}
	tests := []struct {
		name    string
		history []sample
		want    string
	}{
		{"idle", []sample{mk(0, 0, 0, 0, 0), mk(3, 0, 0, 0, 0)}, ""},
		{"flowing", []sample{mk(0, 10, 0, 0, 10), mk(1, 200, 0, 0, 200), mk(2, 300, 0, 0, 300), mk(3, 500, 0, 0, 500)}, ""},
		{"lossy but moving", []sample{mk(0, 10, 0, 0, 10), mk(1, 200, 0, 0, 15), mk(2, 300, 0, 0, 20), mk(3, 500, 0, 0, 20)}, ""},
		{"stuck a to b", []sample{mk(0, 10, 0, 0, 10), mk(1, 200, 0, 0, 10), mk(2, 500, 0, 0, 10), mk(3, 600, 0, 0, 10)}, "490 frames entered LAN1 in the last 3s, none left LAN2"},
		{"stuck b to a", []sample{mk(0, 0, 0, 0, 0), mk(1, 0, 3, 0, 0), mk(2, 0, 7, 0, 0), mk(3, 0, 7, 0, 0)}, "7 frames entered LAN2"},
		// virtio-net counts a frame sent when it reclaims its buffer, at
		// its next transmit: the last frames of a burst wait for the next.
		{"one burst, then nothing", []sample{mk(0, 10, 0, 0, 10), mk(1, 16, 0, 0, 10), mk(2, 16, 0, 0, 10), mk(3, 16, 0, 0, 10)}, ""},
		// Frames handed on since the second-newest sample may not be in
		// the peer's counter yet.
		{"entered in the last interval only", []sample{mk(0, 10, 0, 0, 10), mk(2, 10, 0, 0, 10), mk(3, 29, 0, 0, 10)}, ""},
		{"two samples only", []sample{mk(0, 10, 0, 0, 10), mk(3, 500, 0, 0, 10)}, ""},
		// QEMU's 82574L drops a frame whose IPv4 options are cut off on
		// transmit and counts nothing: not a stall.
		{"only malformed frames", []sample{malformed(mk(0, 10, 0, 0, 10), 0), malformed(mk(1, 20, 0, 0, 10), 10), malformed(mk(2, 29, 0, 0, 10), 19), malformed(mk(4, 29, 0, 0, 10), 19)}, ""},
		{"malformed and well-formed", []sample{malformed(mk(0, 10, 0, 0, 10), 0), malformed(mk(1, 25, 0, 0, 10), 10), malformed(mk(2, 39, 0, 0, 10), 19), malformed(mk(4, 39, 0, 0, 10), 19)}, "10 frames entered LAN1 in the last 4s"},
		// Frames longer than the peer's MTU are drops, not a stall; a
		// peer's driver that takes no frame at all is stalled.
		{"too big for the peer", []sample{refused(mk(0, 10, 0, 0, 10), dropRedirectTooBig, 0), refused(mk(1, 20, 0, 0, 10), dropRedirectTooBig, 10), refused(mk(2, 30, 0, 0, 10), dropRedirectTooBig, 20), refused(mk(3, 30, 0, 0, 10), dropRedirectTooBig, 20)}, ""},
		{"the peer's driver takes none", []sample{txDropped(mk(0, 10, 0, 0, 10), 0), txDropped(mk(1, 20, 0, 0, 10), 10), txDropped(mk(2, 30, 0, 0, 10), 20), txDropped(mk(3, 30, 0, 0, 10), 20)}, "20 frames entered LAN1"},
		// Frames that entered and were never handed on: the segment
		// forwards nothing all the same.
		{"the egress slot empty", []sample{refused(mk(0, 10, 0, 0, 10), dropNoPeer, 0), refused(mk(1, 10, 0, 0, 10), dropNoPeer, 10), refused(mk(2, 10, 0, 0, 10), dropNoPeer, 20), refused(mk(3, 10, 0, 0, 10), dropNoPeer, 20)}, "20 frames entered LAN1"},
		{"every frame dropped on receive", []sample{rxDropped(mk(0, 10, 0, 0, 10), 0), rxDropped(mk(1, 10, 0, 0, 10), 300), rxDropped(mk(2, 10, 0, 0, 10), 700), rxDropped(mk(3, 10, 0, 0, 10), 800)}, "700 frames entered LAN1"},
		{"some dropped on receive, the rest sent", []sample{rxDropped(mk(0, 10, 0, 0, 10), 0), rxDropped(mk(1, 20, 0, 0, 20), 300), rxDropped(mk(2, 30, 0, 0, 30), 700), rxDropped(mk(3, 40, 0, 0, 40), 800)}, ""},
		{"window not yet covered", []sample{mk(0, 10, 0, 0, 10), mk(2, 500, 0, 0, 10)}, ""},
		{"one sample", []sample{mk(0, 10, 0, 0, 10)}, ""},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range progressProblems(ports, tt.history, 3*time.Second) {
			if p.Kind != health.TxStalled || p.Segment != "seg1" {
				t.Errorf("%s: condition %+v, want tx_stalled on seg1", tt.name, p)
			}
			got = append(got, p.Detail)
		}
		all := strings.Join(got, "; ")
		if (tt.want == "") != (all == "") || !strings.Contains(all, tt.want) {
			t.Errorf("%s: problems %q, want %q", tt.name, all, tt.want)
		}
	}
}

func TestMetrics(t *testing.T) {
	st := forwarderapi.Status{
		Live:       health.Live(time.Now()),
		Heartbeat:  time.Now(),
		Conditions: []health.Condition{{Kind: health.LinkDown, Segment: "seg2", Port: "LAN4"}, {Kind: health.LinkDown, Segment: "seg2", Port: "LAN4", Pair: "pair2"}},
		Ports: []forwarderapi.PortStatus{{
			Name: "LAN1", Interface: "eth1", Segment: "seg1", RxPackets: 5,
			Drops:            map[string]uint64{"no_peer": 2},
			MalformedReasons: map[string]uint64{"runt": 3, "too_many_vlans": 1},
		}},
		Segments: []forwarderapi.SegmentStatus{{Name: "seg1", Packets: 5, Forwarding: true}},
		Flows:    &forwarderapi.FlowStats{Flows: 7, TableSize: 1024, Created: 9, Evicted: 2},
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(statusCollector{func() forwarderapi.Status { return st }})
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := rec.Body.String()
	for _, want := range []string{
		"# TYPE ncpos_forwarder_port_rx_packets_total counter\n",
		`ncpos_forwarder_port_rx_packets_total{interface="eth1",port="LAN1",segment="seg1"} 5`,
		`ncpos_forwarder_port_drops_total{interface="eth1",port="LAN1",reason="no_peer",segment="seg1"} 2`,
		`ncpos_forwarder_port_malformed_total{interface="eth1",port="LAN1",reason="runt",segment="seg1"} 3`,
		`ncpos_forwarder_segment_forwarding{segment="seg1"} 1`,
		`ncpos_forwarder_condition{kind="link_down",port="LAN4",segment="seg2"} 1`,
		"ncpos_forwarder_flows 7\n",
		"ncpos_forwarder_flows_evicted_total 2\n",
		"ncpos_forwarder_live 1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if n := strings.Count(out, "# TYPE ncpos_forwarder_port_malformed_total"); n != 1 {
		t.Errorf("TYPE line for malformed_total appears %d times", n)
	}
}

func TestAccountLost(t *testing.T) {
	seg := &Segment{Name: "s"}
	a := &port{pos: 0, segment: seg}
	b := &port{pos: 1, slot: 1, segment: seg}
	a.peer, b.peer = b, a
	ports := []*port{a, b}
	mk := func(passedA, txB, txDroppedB uint64) *sample {
		return &sample{
			ports: []portCounters{{Passed: passedA}, {}},
			links: []linkStats{{}, {txPackets: txB, txDropped: txDroppedB}},
		}
	}
	steps := []struct {
		passedA, txB, txDroppedB uint64
		wantLostB                int64
	}{
		{100, 100, 0, 0},
		{200, 150, 0, 50}, // 50 not (yet) sent
		{300, 300, 0, 0},  // they were only late
		{400, 300, 0, 100},
		{500, 10, 0, 100}, // counters reset: interval skipped
		{600, 60, 0, 150},
		// The driver counted 40 it did not take: kernel_tx, not lost.
		{700, 120, 40, 150},
	}
	prev := mk(0, 0, 0)
	prev.lost = make([]int64, 2)
	for i, st := range steps {
		s := mk(st.passedA, st.txB, st.txDroppedB)
		accountLost(prev, s, ports)
		if s.lost[1] != st.wantLostB || s.lost[0] != 0 {
			t.Errorf("step %d: lost %v, want [0 %d]", i, s.lost, st.wantLostB)
		}
		prev = s
	}
}

// TestProgressWindowTooShort: a stall verdict leaves out the newest
// interval, so a window of less than two intervals could never give one.
func TestProgressWindowTooShort(t *testing.T) {
	o := Options{Interval: time.Second, ProgressWindow: 1500 * time.Millisecond}
	if err := o.setDefaults(); err == nil || !strings.Contains(err.Error(), "shorter than two sampling intervals") {
		t.Errorf("window 1.5s, interval 1s: error %v, want one naming the window", err)
	}
	o = Options{Interval: time.Second, ProgressWindow: 2 * time.Second}
	if err := o.setDefaults(); err != nil && strings.Contains(err.Error(), "progress window") {
		t.Errorf("window 2s, interval 1s: %v", err)
	}
}
