package web

import (
	"net"
	"strings"
	"testing"
)

// Only the box's own names and addresses are served: a page that rebinds
// its own name to the box's address gets nothing, not even what reading
// without a password would show.
func TestHostCheck(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	g := f.srv.guard()
	g.hosts.hostname = func() string { return "fw-campus1" }
	g.hosts.addrs = func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("10.1.2.3"), Mask: net.CIDRMask(24, 32)},
			&net.IPNet{IP: net.ParseIP("2001:db8::5"), Mask: net.CIDRMask(64, 128)}}, nil
	}
	for host, ok := range map[string]bool{
		"appliance.test":          true, // status.names
		"APPLIANCE.test.:8080":    true,
		"fw-campus1":              true,
		"fw-campus1.local":        true,
		"10.1.2.3":                true,
		"10.1.2.3:80":             true,
		"[2001:db8::5]:443":       true,
		"127.0.0.1:18080":         true, // a tunnel or port forward to the box
		"[::1]":                   true,
		"localhost:8080":          true,
		"":                        true, // HTTP/1.0; no browser sends it
		"evil.example":            false,
		"fw-campus1.evil.example": false,
		"10.1.2.4":                false,
		"[2001:db8::6]":           false,
		"appliance.test.evil":     false,
	} {
		r := newRequest("GET", "/api/v1/status", "", nil)
		r.Host = host
		res := f.do(r)
		if ok && res.Code != 200 {
			t.Errorf("Host %q = %d %s, want 200", host, res.Code, res.Body)
		}
		if !ok && (res.Code != 421 || !strings.Contains(res.Body, "is not a name or address of this box")) {
			t.Errorf("Host %q = %d %s, want 421 naming the problem", host, res.Code, res.Body)
		}
	}
	if v, _ := value(scrape(t, f), "ncpos_status_refused_total", "reason", "host"); v != 5 {
		t.Errorf(`ncpos_status_refused_total{reason="host"} = %v, want 5`, v)
	}
}

// API answers, the page and metrics are never kept by a cache; the
// static files may be.
func TestNoStore(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for path, want := range map[string]string{
		"/": "no-store", "/api/v1/status": "no-store", "/api/v1/events": "no-store", "/metrics": "no-store",
		"/healthz": "no-store", "/api/v1/nothing": "no-store", "/static/app.js": "",
	} {
		r := f.do(newRequest("GET", path, "", nil))
		if got := r.Header.Get("Cache-Control"); got != want {
			t.Errorf("GET %s: Cache-Control %q, want %q", path, got, want)
		}
	}
}
