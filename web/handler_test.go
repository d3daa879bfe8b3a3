package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

func TestReadRoutes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.traffic(3, time.Second, map[string]uint64{"LAN1": 1000}, 500)
	for _, tc := range []struct {
		method, path string
		code         int
		ctype        string
		contains     string
	}{
		{"GET", "/healthz", 200, "text/plain", "ok"},
		{"GET", "/", 200, "text/html", `"build_id":"test-build-7"`},
		{"GET", "/static/app.js", 200, "javascript", "renderPorts"},
		{"GET", "/static/app.css", 200, "text/css", ".badge"},
		{"GET", "/api/v1/", 200, "application/json", "/api/v1/status"},
		{"GET", "/api/v1/status", 200, "application/json", `"summary"`},
		{"GET", "/api/v1/system", 200, "application/json", `"build_id": "test-build-7"`},
		{"GET", "/api/v1/ports", 200, "application/json", `"LAN1"`},
		{"GET", "/api/v1/segments", 200, "application/json", `"seg1"`},
		{"GET", "/api/v1/watchdog", 200, "application/json", `"i6300ESB timer"`},
		{"GET", "/api/v1/host", 200, "application/json", `"coretemp"`},
		{"GET", "/api/v1/events", 200, "application/json", `"events"`},
		{"GET", "/api/v1/selftest", 200, "application/json", `"self_test": null`},
		{"GET", "/api/v1/hardware", 200, "application/json", `"why": "i2c-0 answers at 0x73"`},
		{"GET", "/metrics", 200, "text/plain", "ncpos_build_info"},
		{"POST", "/api/v1/status", http.StatusMethodNotAllowed, "", ""},
		{"DELETE", "/", http.StatusMethodNotAllowed, "", ""},
		{"GET", "/api/v1/control/bypass", http.StatusMethodNotAllowed, "", ""},
		{"GET", "/nope", http.StatusNotFound, "", ""},
		{"GET", "/static/missing.js", http.StatusNotFound, "", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := f.do(newRequest(tc.method, tc.path, "", nil))
			if r.Code != tc.code {
				t.Fatalf("= %d, want %d: %.300s", r.Code, tc.code, r.Body)
			}
			if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
				t.Errorf("Content-Type %q, want %q", ct, tc.ctype)
			}
			if !strings.Contains(r.Body, tc.contains) {
				t.Errorf("body lacks %q:\n%.500s", tc.contains, r.Body)
			}
			if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("CSP %q", csp)
			}
		})
	}
}

// TestPageEmbedsSafeJSON checks that text from people (a bypass reason)
// cannot close the embedded script.
func TestPageEmbedsSafeJSON(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.bypassd.set("seg1", "bypass", `</script><script>alert(1)</script>`, f.clock())
	r := f.do(newRequest("GET", "/", "", nil))
	if strings.Contains(r.Body, "<script>alert") {
		t.Fatalf("reason injected into the page:\n%s", r.Body)
	}
	start := strings.Index(r.Body, `<script type="application/json" id="initial">`)
	end := strings.Index(r.Body[start:], "</script>")
	raw := r.Body[start+len(`<script type="application/json" id="initial">`) : start+end]
	var s api.Snapshot
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("embedded JSON: %v\n%.300s", err, raw)
	}
	if s.Segments[0].Bypass.Reason != `</script><script>alert(1)</script>` {
		t.Fatalf("reason = %q", s.Segments[0].Bypass.Reason)
	}
}

func TestStatusAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.traffic(5, time.Second, map[string]uint64{"MGMT": 10, "LAN1": 1000, "LAN2": 1000, "LAN3": 500}, 500)

	var s api.Snapshot
	f.getJSON("/api/v1/status?history=3", &s)

	var names []string
	for _, p := range s.Ports {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "MGMT,LAN1,LAN2,LAN3,LAN4" {
		t.Fatalf("ports in order %v, want management first then as counted", names)
	}
	byName := map[string]api.Port{}
	for _, p := range s.Ports {
		byName[p.Name] = p
	}
	for _, tc := range []struct {
		port, role, seg, link string
		speed                 int
		rxPPS, txPPS, rxBPS   float64
		dropsPS               float64
	}{
		{"MGMT", "management", "", "up", 1000, 10, 9.9, 10 * 500 * 8, 0},
		{"LAN1", "data", "seg1", "up", 10000, 1000, 990, 1000 * 500 * 8, 0},
		{"LAN3", "data", "seg2", "up", 1000, 500, 495, 500 * 500 * 8, 5},
		{"LAN4", "data", "seg2", "down", -1, 0, 0, 0, 0},
	} {
		p := byName[tc.port]
		if p.Role != tc.role || p.Segment != tc.seg || p.Link != tc.link || p.Up != (tc.link == "up") || p.SpeedMbps != tc.speed {
			t.Errorf("%s = role %q seg %q link %q speed %d, want %q %q %q %d", tc.port, p.Role, p.Segment, p.Link, p.SpeedMbps, tc.role, tc.seg, tc.link, tc.speed)
		}
		if p.Rates.RxPPS != tc.rxPPS || p.Rates.RxBPS != tc.rxBPS || p.Rates.DropsPS != tc.dropsPS {
			t.Errorf("%s rates = %+v, want rx %v pps %v bit/s, drops %v/s", tc.port, p.Rates, tc.rxPPS, tc.rxBPS, tc.dropsPS)
		}
		if len(p.History) != 3 {
			t.Errorf("%s history has %d points, want the 3 asked for", tc.port, len(p.History))
		}
	}
	if c := byName["LAN1"].Counters; c.RxPackets != 5000 || c.RxBytes != 5000*500 {
		t.Errorf("LAN1 counters %+v", c)
	}
	// forwarderd's LLDP neighbours of LAN1 reach its port; LAN2 heard none.
	if l := byName["LAN1"].LLDP; l == nil || len(l.Neighbors) != 1 || l.Neighbors[0].SystemName != "sw-core-1" || l.Neighbors[0].ManagementAddress != "192.0.2.7" ||
		l.Rejected != 2 || !strings.Contains(l.LastError, "TLV 1") {
		t.Errorf("LAN1 LLDP = %+v", l)
	}
	if l := byName["LAN2"].LLDP; l != nil {
		t.Errorf("LAN2, which forwarderd did not report, has LLDP %+v", l)
	}

	seg1, seg2 := s.Segments[0], s.Segments[1]
	if seg1.Name != "seg1" || seg1.Bypass == nil || seg1.Bypass.State != "normal" || seg1.Forwarding == nil ||
		seg1.Forwarding.Packets != 123456 || seg1.Forwarding.Drops != 56 || seg1.Mode != "forward" || seg1.Engine != "xdp" ||
		len(seg1.Cores) != 1 || seg1.Cores[0] != 1 {
		t.Errorf("seg1 = %+v (bypass %+v, forwarding %+v)", seg1, seg1.Bypass, seg1.Forwarding)
	}
	if seg2.Bypass == nil || seg2.Bypass.State != "bypass" || !strings.Contains(seg2.Bypass.Reason, "LAN4 link down") || seg2.Forwarding.Healthy {
		t.Errorf("seg2 = %+v (bypass %+v)", seg2, seg2.Bypass)
	}
	if s.Summary.State != "bypass" || !strings.Contains(strings.Join(s.Summary.Problems, ";"), "segment seg2 in bypass") ||
		!strings.Contains(strings.Join(s.Summary.Problems, ";"), "port LAN4 link down") {
		t.Errorf("summary = %+v", s.Summary)
	}
	if len(s.Host.CPUs) != 2 || s.Host.CPUs[0].BusyPercent != 25 || s.Host.CPUs[1].BusyPercent != 5 {
		t.Errorf("cpus = %+v, want 25%% and 5%%", s.Host.CPUs)
	}
	if s.Host.Memory.UsedPercent != 25 || s.Host.Load[0] != 0.42 || s.Host.BootTime.Unix() != fixtureBoot {
		t.Errorf("host = %+v", s.Host)
	}
	if len(s.Host.Sensors) != 2 || s.Host.Sensors[0].Value != 47 || s.Host.Sensors[0].Crit != 100 || s.Host.Sensors[1].Unit != "RPM" {
		t.Errorf("sensors = %+v", s.Host.Sensors)
	}
	p := s.System.Watchdog.Petter
	if p == nil || p.Identity != "i6300ESB timer" || p.LastReset.Kind != "watchdog" {
		t.Errorf("watchdog = %+v", s.System.Watchdog)
	}
	if s.Control.Bypass != "available" || s.Control.PasswordSource != "/perm/ncpos/control-password" {
		t.Errorf("control = %+v", s.Control)
	}
}

// TestDaemonsAbsent: without forwarderd and bypassd the page still works
// and says so.
func TestDaemonsAbsent(t *testing.T) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	var s api.Snapshot
	f.getJSON("/api/v1/status", &s)
	states := map[string]string{}
	for _, d := range s.System.Daemons {
		states[d.Name] = d.State
	}
	for _, d := range []string{"forwarderd", "bypassd", "watchdogd"} {
		if states[d] != api.DaemonNotRunning {
			t.Errorf("%s = %q, want %q", d, states[d], api.DaemonNotRunning)
		}
	}
	if states["statusd"] != api.DaemonHealthy {
		t.Errorf("statusd = %q", states["statusd"])
	}
	for _, seg := range s.Segments {
		if seg.Bypass != nil || seg.BypassNote != "bypassd not running" || seg.Forwarding != nil || seg.ForwarderNote != "forwarderd not running" {
			t.Errorf("segment %s = %+v", seg.Name, seg)
		}
	}
	if s.Summary.State != "degraded" || s.Control.Bypass != "bypassd not running" {
		t.Errorf("summary %+v, control %+v", s.Summary, s.Control)
	}
	if s.System.Watchdog.Petter != nil || s.System.Watchdog.Error == "" {
		t.Errorf("watchdog = %+v, want an error saying watchdogd is absent", s.System.Watchdog)
	}
}
