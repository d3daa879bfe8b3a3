package web

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/api"
)

// TestMonitorEvents drives the fake appliance through the transitions a
// remote engineer must hear about and checks each event's kind, severity
// and text.
func TestMonitorEvents(t *testing.T) {
	f := newFixture(t, fixtureOpts{rejected: []string{"/perm/ncpos/ncpos.toml rejected, keeping the previous configuration: ncpos.toml:3: services[0]: unknown service \"sshd\""}})
	f.traffic(1, time.Second, nil, 0)
	start := f.events.Recent(0)
	for _, want := range []struct {
		kind string
		sev  events.Severity
		text string
	}{
		{events.KindConfig, events.Error, `configuration rejected: /perm/ncpos/ncpos.toml rejected`},
		{events.KindBypass, events.Warning, "segment seg2 in bypass: forwarder unhealthy: port LAN4 link down"},
		{events.KindWatchdog, events.Critical, "appliance was reset by the hardware watchdog: forwarderd liveness failing"},
		{events.KindCondition, events.Warning, "condition began: link_down (seg2 LAN4): port LAN4 (eth4) link down"},
	} {
		if !hasEventSev(start, want.kind, want.sev, want.text) {
			t.Errorf("at start: no %s %s event %q in %+v", want.sev, want.kind, want.text, start)
		}
	}
	if len(start) != 4 {
		t.Errorf("at start: %d events, want 4 (seg1 is normal, links unchanged): %+v", len(start), start)
	}

	for _, step := range []struct {
		name   string
		change func()
		kind   string
		sev    events.Severity
		text   string
	}{
		{"link down", func() { f.setLink("eth1", "down") }, events.KindLink, events.Warning, "port LAN1 (eth1) link down (was up)"},
		{"link up", func() { f.setLink("eth1", "up") }, events.KindLink, events.Notice, "port LAN1 (eth1) link up (was down)"},
		{"into bypass", func() { f.bypassd.set("seg1", "bypass", "forwarder unhealthy: heartbeat stale", f.clock()) }, events.KindBypass, events.Warning,
			"segment seg1 in bypass: forwarder unhealthy: heartbeat stale (was normal)"},
		{"back to normal", func() { f.bypassd.set("seg1", "normal", "forwarder healthy for 30s", f.clock()) }, events.KindBypass, events.Notice,
			"segment seg1 forwarding normally: forwarder healthy for 30s (was bypass)"},
		{"disconnect", func() { f.bypassd.set("seg2", "disconnect", "operator", f.clock()) }, events.KindBypass, events.Warning, "segment seg2 disconnected"},
		{"self-test passed", func() {
			f.write("perm/selftest.json", `{"finished":"2026-11-30T12:10:00Z","passed":true,"summary":"seg1 64 B: 1.48 Mpps, 0 loss","results":[{"frame_size":64,"throughput_pps":1488095,"throughput_mbps":761.9,"loss_percent":0}]}`)
		}, events.KindSelfTest, events.Notice, "self-test passed: seg1 64 B: 1.48 Mpps"},
		{"self-test failed", func() {
			f.write("perm/selftest.json", `{"finished":"2026-11-30T13:10:00Z","passed":false,"summary":"seg1 loss at 64 B"}`)
		}, events.KindSelfTest, events.Warning, "self-test FAILED: seg1 loss at 64 B"},
	} {
		t.Run(step.name, func(t *testing.T) {
			before := f.events.Recent(1)[0].Seq
			step.change()
			f.traffic(1, time.Second, nil, 0)
			evs := f.events.Recent(0)
			var fresh []events.Event
			for _, e := range evs {
				if e.Seq > before {
					fresh = append(fresh, e)
				}
			}
			if len(fresh) != 1 || !hasEventSev(fresh, step.kind, step.sev, step.text) {
				t.Fatalf("events %+v, want exactly one %s %s %q", fresh, step.sev, step.kind, step.text)
			}
		})
	}
	// Nothing changed: nothing to say.
	n := len(f.events.Recent(0))
	f.traffic(3, time.Second, nil, 0)
	if got := len(f.events.Recent(0)); got != n {
		t.Fatalf("%d new events without a change", got-n)
	}
}

func hasEventSev(evs []events.Event, kind string, sev events.Severity, text string) bool {
	for _, e := range evs {
		if e.Kind == kind && e.Severity == sev && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// TestEventsReachSyslog: a bypass transition seen by the monitor arrives
// at a syslog collector as an RFC 5424 message with structured data.
func TestEventsReachSyslog(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	s, err := events.NewSender("udp://"+pc.LocalAddr().String(), events.Header{Hostname: "ncpos-lab", AppName: "ncpos", ProcID: "7"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	f := newFixture(t, fixtureOpts{})
	f.events.AddSink(s)
	f.traffic(1, time.Second, nil, 0)
	f.bypassd.set("seg1", "bypass", "forwarder unhealthy", f.clock())
	f.traffic(1, time.Second, nil, 0)

	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no syslog message for seg1: %v", err)
		}
		msg := string(buf[:n])
		if strings.Contains(msg, `segment="seg1"`) {
			if !strings.HasPrefix(msg, "<28>1 ") || !strings.Contains(msg, " ncpos-lab ncpos 7 bypass [ncpos@32473 ") ||
				!strings.HasSuffix(msg, "segment seg1 in bypass: forwarder unhealthy (was normal)") {
				t.Fatalf("syslog message %q", msg)
			}
			return
		}
	}
}

func TestSelfTestInAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	os.MkdirAll(filepath.Join(f.root, "perm"), 0o755)
	f.write("perm/selftest.json", `{"finished":"2026-11-30T12:10:00Z","passed":true,"summary":"ok","results":[{"frame_size":1518,"throughput_pps":81274,"throughput_mbps":987.6,"loss_percent":0}]}`)
	var got struct {
		SelfTest *api.SelfTest `json:"self_test"`
	}
	f.getJSON("/api/v1/selftest", &got)
	if got.SelfTest == nil || !got.SelfTest.Passed || len(got.SelfTest.Results) != 1 || got.SelfTest.Results[0].FrameSize != 1518 {
		b, _ := json.Marshal(got)
		t.Fatalf("self-test = %s", b)
	}
	// A new report is served at once, though the snapshot was just
	// taken: a client that saw the job end reads the run's report.
	f.getJSON("/api/v1/status", new(api.Snapshot))
	f.write("perm/selftest.json", `{"finished":"2026-11-30T12:20:00Z","passed":false,"verdict":"INCONCLUSIVE","summary":"second run"}`)
	f.getJSON("/api/v1/selftest", &got)
	if got.SelfTest == nil || got.SelfTest.Summary != "second run" {
		t.Fatalf("self-test right after a new report: %+v, want the second run's", got.SelfTest)
	}
	f.write("perm/selftest.json", `{not json`)
	var s api.Snapshot
	f.traffic(1, time.Second, nil, 0)
	f.getJSON("/api/v1/status", &s)
	if s.SelfTest != nil || !strings.Contains(strings.Join(s.Errors, ";"), "self-test report") {
		t.Fatalf("broken report: self-test %+v, errors %v", s.SelfTest, s.Errors)
	}
}
