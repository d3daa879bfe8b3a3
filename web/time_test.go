package web

import (
	"slices"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
)

// TestTimeShown: the clock's state from statusd's NTP client is in
// /api/v1/system and /metrics; with no servers configured the metrics
// say nothing (an alert on them would fire on every box without NTP).
func TestTimeShown(t *testing.T) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	last := time.Date(2026, 11, 30, 11, 59, 0, 0, time.UTC)
	st := api.TimeSync{Servers: []string{}}
	f.mon.Collector.Time = func() api.TimeSync { return st }
	f.traffic(1, time.Second, nil, 0)
	fams := scrape(t, f)
	if _, ok := value(fams, "ncpos_time_synced"); ok {
		t.Errorf("ncpos_time_synced exported without servers")
	}
	st = api.TimeSync{Servers: []string{"192.0.2.1", "ntp.example.net"}, Synced: true, Server: "192.0.2.1", Stratum: 2,
		OffsetSeconds: -0.25, RootDistanceSeconds: 0.012, LastSync: last, FirstSync: last.Add(-time.Hour), StepSeconds: 631152000}
	f.traffic(1, time.Second, nil, 0)
	var sys api.System
	f.getJSON("/api/v1/system", &sys)
	if sys.Time == nil || !sys.Time.Synced || sys.Time.Server != "192.0.2.1" || sys.Time.StepSeconds != 631152000 || !sys.Time.LastSync.Equal(last) {
		t.Errorf("/api/v1/system time = %+v, want %+v", sys.Time, st)
	}
	fams = scrape(t, f)
	for _, c := range []struct {
		name string
		want float64
	}{
		{"ncpos_time_synced", 1}, {"node_timex_sync_status", 1}, {"ncpos_time_offset_seconds", -0.25},
		{"ncpos_time_root_distance_seconds", 0.012}, {"ncpos_time_last_sync_timestamp_seconds", float64(last.Unix())},
	} {
		if v, ok := value(fams, c.name); !ok || v != c.want {
			t.Errorf("%s = %v, %v; want %v", c.name, v, ok, c.want)
		}
	}
	st.Synced, st.Error = false, "192.0.2.1: i/o timeout"
	// What the NTP client tells the monitor (timesync.Keeper.Conditions).
	f.mon.Tell("time", []health.Condition{
		{Kind: health.ClockNotSynced, Source: "statusd", Since: last, Detail: "no NTP server answered well: " + st.Error},
		{Kind: health.NameUnresolved, Source: "statusd", Since: last, Detail: "NTP servers whose names do not resolve: ntp.example.net: lookup ntp.example.net: no such host"}})
	f.traffic(1, time.Second, nil, 0)
	if v, ok := value(scrape(t, f), "ncpos_time_synced"); !ok || v != 0 {
		t.Errorf("ncpos_time_synced after the loss = %v, %v; want 0", v, ok)
	}
	var s api.Snapshot
	f.getJSON("/api/v1/status", &s)
	var kinds []string
	for _, c := range s.Conditions {
		kinds = append(kinds, string(c.Kind))
	}
	if !slices.Contains(kinds, "clock_not_synced") || !slices.Contains(kinds, "name_unresolved") || s.Summary.State != "degraded" {
		t.Errorf("after the loss: conditions %q, summary %+v; want both clock conditions and degraded", kinds, s.Summary)
	}
}
