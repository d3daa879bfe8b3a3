package change

import (
	"testing"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/api"
)

func TestLastGood(t *testing.T) {
	kept := 0
	l := &LastGood{After: 2 * time.Minute, Keep: func() (bool, error) { kept++; return true, nil }, Events: events.NewLog(10)}
	good := &api.Snapshot{System: &api.System{Daemons: []api.Daemon{{Name: "forwarderd", Configured: true, Healthy: true}}},
		Segments: []api.Segment{{Name: "seg1", Forwarding: &api.SegmentForwarding{Healthy: true}}}}
	bad := &api.Snapshot{System: good.System, Segments: []api.Segment{{Name: "seg1", Forwarding: &api.SegmentForwarding{Healthy: false}}}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		at   time.Duration
		snap *api.Snapshot
		want int
	}{
		{0, good, 0},
		{90 * time.Second, good, 0},
		{100 * time.Second, bad, 0}, // a break starts the wait anew
		{110 * time.Second, good, 0},
		{200 * time.Second, good, 0},
		{230 * time.Second, good, 1},
		{400 * time.Second, good, 1}, // once per boot
	} {
		l.observe(t0.Add(step.at), step.snap)
		if kept != step.want {
			t.Fatalf("at %v: kept %d times, want %d", step.at, kept, step.want)
		}
	}
	if ev := l.Events.Recent(0); len(ev) != 1 || ev[0].Kind != events.KindConfig || ev[0].Fields["action"] != "keep_last_good" {
		t.Errorf("events %+v, want one, of the last good configuration kept", ev)
	}
}
