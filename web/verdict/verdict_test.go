package verdict

import (
	"strings"
	"testing"

	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
)

func seg(name string, conds ...health.Kind) api.Segment {
	f := &api.SegmentForwarding{Healthy: len(conds) == 0}
	for _, k := range conds {
		f.Conditions = append(f.Conditions, health.Condition{Kind: k, Segment: name, Detail: "words that do not matter"})
	}
	return api.Segment{Name: name, Forwarding: f}
}

func TestAccept(t *testing.T) {
	live := []api.Daemon{{Name: "forwarderd", Configured: true, Healthy: true}, {Name: "bypassd", Configured: true, Healthy: true}}
	notLive := []api.Daemon{{Name: "forwarderd", Configured: true, Healthy: false, Reason: "heartbeat_stale"}}
	before := BaselineOf([]api.Segment{seg("seg1"), seg("seg2", health.LinkDown)})
	tests := []struct {
		name    string
		daemons []api.Daemon
		after   []api.Segment
		want    string // "" accepts
	}{
		{"same as before", live, []api.Segment{seg("seg1"), seg("seg2", health.LinkDown)}, ""},
		{"the cable came back", live, []api.Segment{seg("seg1"), seg("seg2")}, ""},
		{"a forwarding segment broke", live, []api.Segment{seg("seg1", health.TxStalled), seg("seg2", health.LinkDown)}, "segment seg1 forwarded before, now tx_stalled"},
		{"a down segment got worse", live, []api.Segment{seg("seg1"), seg("seg2", health.LinkDown, health.PortAbsent)}, "segment seg2 was link_down, now link_down, port_absent"},
		{"a segment is gone", live, []api.Segment{seg("seg2", health.LinkDown)}, "segment seg1 is gone"},
		{"not live", notLive, []api.Segment{seg("seg1"), seg("seg2", health.LinkDown)}, "forwarderd not live"},
		{"no daemons", nil, []api.Segment{seg("seg1"), seg("seg2")}, "no daemons"},
	}
	for _, tt := range tests {
		err := Accept(before, tt.daemons, BaselineOf(tt.after))
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
