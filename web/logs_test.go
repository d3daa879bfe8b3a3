package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
)

// The daemons' recent lines are in the API, per daemon and in all, and
// their counts in /metrics; a bad query is refused with its reason.
func TestLogsAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c := &logs.Collector{Lines: 10}
	f.srv.Logs = c
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for i := range 15 {
		c.Add(ipc.LogLine{Daemon: "forwarderd", PID: 300, Time: t0.Add(time.Duration(i) * time.Second), Text: fmt.Sprintf("forwarding %d", i)})
	}
	c.Add(ipc.LogLine{Daemon: "bypassd", PID: 200, Time: t0, Text: "relay pair1 normal", Missed: 3})

	var all struct{ Daemons []ipc.DaemonLog }
	f.getJSON("/api/v1/logs?limit=4", &all)
	if len(all.Daemons) != 2 || all.Daemons[0].Daemon != "bypassd" || all.Daemons[1].Daemon != "forwarderd" {
		t.Fatalf("daemons %+v", all.Daemons)
	}
	fw := all.Daemons[1]
	if len(fw.Lines) != 4 || fw.Lines[0].Text != "forwarding 11" || fw.Lines[3].Text != "forwarding 14" || fw.Total != 15 || fw.PID != 300 {
		t.Fatalf("forwarderd: %+v", fw)
	}
	var one struct{ Daemons []ipc.DaemonLog }
	f.getJSON("/api/v1/logs?daemon=bypassd", &one)
	if len(one.Daemons) != 1 || one.Daemons[0].Missed != 3 || one.Daemons[0].Lines[0].Text != "relay pair1 normal" {
		t.Fatalf("bypassd: %+v", one.Daemons)
	}
	f.getJSON("/api/v1/logs", &all)
	if n := len(all.Daemons[1].Lines); n != 10 {
		t.Fatalf("default answer has %d lines of forwarderd, want the 10 kept", n)
	}

	for path, want := range map[string]string{
		"/api/v1/logs?limit=-1":         "limit: want a number",
		"/api/v1/logs?limit=many":       "limit: want a number",
		"/api/v1/logs?daemon=watchdogd": `daemon "watchdogd": no lines from it`,
	} {
		r := f.do(newRequest("GET", path, "", nil))
		if r.Code/100 != 4 || !strings.Contains(r.Body, want) {
			t.Errorf("GET %s = %d %q, want a refusal saying %q", path, r.Code, r.Body, want)
		}
	}

	m := f.do(newRequest("GET", "/metrics", "", nil)).Body
	for _, want := range []string{
		`ncpos_log_lines_total{daemon="forwarderd"} 15`,
		`ncpos_log_lines_total{daemon="bypassd"} 1`,
		`ncpos_log_lines_missed_total{daemon="bypassd"} 3`,
		`ncpos_log_datagrams_malformed_total 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
