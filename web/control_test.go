package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/reply"
)

func basic(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

var goodAuth = basic("ncpos", fixturePassword)

// TestControlRefusals covers every way a control request is refused, and
// that each gets the status code a client can act on.
func TestControlRefusals(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	const okBody = `{"segment":"seg1","state":"bypass","reason":"maintenance window"}`
	json := map[string]string{"Content-Type": "application/json", "Authorization": goodAuth}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		body     string
		headers  map[string]string
		code     int
		contains string
	}{
		{"no credentials", "POST", "/api/v1/control/bypass", okBody, with(json, "Authorization", ""), 401, "authentication required"},
		{"wrong password", "POST", "/api/v1/control/bypass", okBody, with(json, "Authorization", basic("ncpos", "guess")), 401, ""},
		{"wrong user", "POST", "/api/v1/control/bypass", okBody, with(json, "Authorization", basic("root", fixturePassword)), 401, ""},
		{"not basic", "POST", "/api/v1/control/bypass", okBody, with(json, "Authorization", "Bearer "+fixturePassword), 401, ""},
		{"reboot without credentials", "POST", "/api/v1/control/reboot", `{}`, with(json, "Authorization", ""), 401, ""},
		{"cross-site form post", "POST", "/api/v1/control/bypass", "segment=seg1&state=bypass&reason=x",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "cross-site"},
		{"cross-site form post with cached credentials", "POST", "/api/v1/control/reboot", "reason=x",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example", "Authorization": goodAuth}, 403, "cross-site"},
		{"cross-site fetch", "POST", "/api/v1/control/bypass", okBody, with(json, "Sec-Fetch-Site", "cross-site"), 403, ""},
		{"same-site is not same-origin", "POST", "/api/v1/control/bypass", okBody, with(json, "Sec-Fetch-Site", "same-site"), 403, ""},
		{"foreign Origin", "POST", "/api/v1/control/bypass", okBody, with(json, "Origin", "http://appliance.test.evil.example"), 403, ""},
		{"foreign Referer only", "POST", "/api/v1/control/bypass", okBody, with(json, "Referer", "http://evil.example/page"), 403, "Referer"},
		{"form content type", "POST", "/api/v1/control/bypass", "segment=seg1", with(json, "Content-Type", "application/x-www-form-urlencoded"), 415, ""},
		{"bad JSON", "POST", "/api/v1/control/bypass", `{"segment": "seg1",`, json, 400, "bad JSON"},
		{"not an object", "POST", "/api/v1/control/bypass", `["seg1"]`, json, 400, "bad JSON"},
		{"unknown field", "POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"x","force":true}`, json, 400, "unknown field"},
		{"two values", "POST", "/api/v1/control/bypass", okBody + okBody, json, 400, "more than one"},
		{"empty body", "POST", "/api/v1/control/bypass", "", json, 400, "bad JSON"},
		{"oversized body", "POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"` + strings.Repeat("x", reply.MaxBodyBytes) + `"}`, json, 413, "larger than"},
		{"oversized reboot body", "POST", "/api/v1/control/reboot", `{"reason":"` + strings.Repeat("x", 2*reply.MaxBodyBytes) + `"}`, json, 413, ""},
		{"bad state", "POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"off","reason":"x"}`, json, 400, "want one of"},
		{"no reason", "POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"  "}`, json, 400, "reason is required"},
		{"long reason", "POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"` + strings.Repeat("x", 300) + `"}`, json, 400, "longer"},
		{"bad expiry", "POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"x","expires_in":"soon"}`, json, 400, "expires_in"},
		{"expiry too long", "POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"x","expires_in":"800h"}`, json, 400, "at most"},
		{"unknown segment", "POST", "/api/v1/control/bypass", `{"segment":"seg9","state":"bypass","reason":"x"}`, json, 404, "seg9"},
		{"GET on control", "GET", "/api/v1/control/reboot", "", json, 405, ""},
		{"PUT on control", "PUT", "/api/v1/control/bypass", okBody, json, 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(newRequest(tc.method, tc.path, tc.body, tc.headers))
			if r.Code != tc.code {
				t.Fatalf("= %d, want %d: %s", r.Code, tc.code, r.Body)
			}
			if tc.code == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), `Basic realm="ncpos"`) {
				t.Errorf("401 without a Basic challenge: %v", r.Header)
			}
			if !strings.Contains(r.Body, tc.contains) {
				t.Errorf("body %q lacks %q", r.Body, tc.contains)
			}
			if tc.code != 405 && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Errorf("error is %q, want JSON", r.Header.Get("Content-Type"))
			}
		})
	}
	if len(f.bypassd.requests) != 0 || len(f.reboots) != 0 {
		t.Fatalf("a refused request got through: overrides %+v, reboots %v", f.bypassd.requests, f.reboots)
	}
}

func TestControlBypass(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.mon.Step(t.Context())
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		state   string
	}{
		{"API client, Basic only", map[string]string{"Authorization": goodAuth, "Content-Type": "application/json"},
			`{"segment":"seg1","state":"bypass","reason":"maintenance window","expires_in":"30m"}`, "bypass"},
		{"dashboard, same origin", map[string]string{"Authorization": goodAuth, "Content-Type": "application/json",
			"Origin": "http://appliance.test", "Sec-Fetch-Site": "same-origin", "Referer": "http://appliance.test/"},
			`{"segment":"seg1","state":"auto"}`, "bypass"},
		{"no content type", map[string]string{"Authorization": goodAuth},
			`{"segment":"seg2","state":"normal","reason":"LAN4 cable replaced, checked by hand"}`, "normal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(newRequest("POST", "/api/v1/control/bypass", tc.body, tc.headers))
			if r.Code != 200 {
				t.Fatalf("= %d: %s", r.Code, r.Body)
			}
			var st api.BypassState
			if err := json.Unmarshal([]byte(r.Body), &st); err != nil || st.State != tc.state {
				t.Fatalf("answer %s (%v), want state %s", r.Body, err, tc.state)
			}
		})
	}
	o := f.bypassd.requests
	if len(o) != 3 || o[0].Method != "POST" || o[0].Pair != "pair1" || o[0].For != "30m0s" || o[0].By != "ncpos@192.0.2.1" ||
		o[1].Method != "DELETE" || o[1].Pair != "pair1" || o[1].By != "ncpos@192.0.2.1" || o[2].State != "normal" || o[2].Pair != "pair2" {
		t.Fatalf("bypassd got %+v", o)
	}
	f.mon.Step(t.Context())
	evs := f.events.Recent(0)
	for _, want := range []string{"manual bypass override of segment seg1: bypass, by ncpos@192.0.2.1: maintenance window, for 30m0s",
		"segment seg1 in bypass: override by ncpos@192.0.2.1: maintenance window (was normal)",
		"manual bypass override of segment seg1 ended by ncpos@192.0.2.1", "segment seg2 forwarding normally"} {
		if !hasEvent(evs, "", want) && !hasEvent(evs, events.KindControl, want) && !hasEvent(evs, events.KindBypass, want) {
			t.Errorf("no event %q in %+v", want, evs)
		}
	}
}

// ncpos update marks the overrides it sets for its reboots; the mark
// reaches bypassd and shows in the segment's relay, and an ending ("auto")
// carries none.
func TestControlBypassUpdateMark(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	h := map[string]string{"Authorization": goodAuth, "Content-Type": "application/json"}
	r := f.do(newRequest("POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"ncpos update to b2","expires_in":"10m","update":true}`, h))
	var st api.BypassState
	if err := json.Unmarshal([]byte(r.Body), &st); r.Code != 200 || err != nil || st.Override == nil || !st.Override.Update {
		t.Fatalf("= %d %s, want the relay's override marked as an update's", r.Code, r.Body)
	}
	if r := f.do(newRequest("POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"auto","update":true}`, h)); r.Code != 200 {
		t.Fatalf("ending it: %d %s", r.Code, r.Body)
	}
	if o := f.bypassd.requests; len(o) != 2 || !o[0].Update || o[0].For != "10m0s" || o[1].Method != "DELETE" {
		t.Fatalf("bypassd got %+v", o)
	}
	if r := f.do(newRequest("POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"x","update":"yes"}`, h)); r.Code != 400 {
		t.Errorf("update not a boolean: %d %s, want 400", r.Code, r.Body)
	}
}

func TestControlBypassdAbsent(t *testing.T) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	r := f.do(newRequest("POST", "/api/v1/control/bypass", `{"segment":"seg1","state":"bypass","reason":"x"}`,
		map[string]string{"Authorization": goodAuth, "Content-Type": "application/json"}))
	if r.Code != http.StatusServiceUnavailable || !strings.Contains(r.Body, "bypassd not running") {
		t.Fatalf("= %d %s, want 503 bypassd not running", r.Code, r.Body)
	}
}

func TestControlReboot(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	r := f.do(newRequest("POST", "/api/v1/control/reboot", `{"reason":"new firmware"}`,
		map[string]string{"Authorization": goodAuth, "Content-Type": "application/json"}))
	if r.Code != http.StatusAccepted || !strings.Contains(r.Body, "rebooting") {
		t.Fatalf("= %d %s, want 202", r.Code, r.Body)
	}
	if len(f.reboots) != 1 || f.reboots[0] != "new firmware" {
		t.Fatalf("reboots %v", f.reboots)
	}
	if !hasEvent(f.events.Recent(0), events.KindControl, "reboot requested by ncpos@192.0.2.1: new firmware") {
		t.Fatalf("no reboot event: %+v", f.events.Recent(0))
	}
	f.srv.Rebooter = nil
	r = f.do(newRequest("POST", "/api/v1/control/reboot", `{}`, map[string]string{"Authorization": goodAuth}))
	if r.Code != http.StatusServiceUnavailable {
		t.Fatalf("without a rebooter = %d %s, want 503", r.Code, r.Body)
	}
}

func TestAuthRead(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.Auth.AuthRead = true
	for _, tc := range []struct {
		path, auth string
		code       int
	}{
		{"/healthz", "", 200},
		{"/", "", 401},
		{"/api/v1/status", "", 401},
		{"/metrics", "", 401},
		{"/static/app.js", "", 401},
		{"/api/v1/status", basic("ncpos", "nope"), 401},
		{"/api/v1/status", goodAuth, 200},
		{"/metrics", goodAuth, 200},
		{"/metrics", basic("gokrazy", fixturePassword), 401}, // gokrazy's user opens nothing
		{"/", goodAuth, 200},
	} {
		h := map[string]string{}
		if tc.auth != "" {
			h["Authorization"] = tc.auth
		}
		if r := f.do(newRequest("GET", tc.path, "", h)); r.Code != tc.code {
			t.Errorf("GET %s (auth %q) = %d, want %d", tc.path, tc.auth, r.Code, tc.code)
		}
	}
	// No password anywhere: everything but /healthz stays locked.
	f.srv.Auth.Password = &Password{}
	if r := f.do(newRequest("GET", "/api/v1/status", "", map[string]string{"Authorization": basic("ncpos", "")})); r.Code != 401 {
		t.Errorf("with no password set up = %d, want 401", r.Code)
	}
}

func TestLoadPassword(t *testing.T) {
	dir := t.TempDir()
	perm := filepath.Join(dir, "control-password")
	h, _ := passwd.Hash("per-box-password")
	os.WriteFile(perm, append(h, '\n'), 0o600)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("per-box-password\n"), 0o600)
	cfgHash, _ := passwd.Hash("from-the-configuration")
	for _, tc := range []struct {
		name   string
		st     config.Status
		file   string
		good   string
		source string
		err    string
	}{
		{"the box's own", config.Status{}, perm, "per-box-password", perm, ""},
		{"configured hash wins", config.Status{PasswordHash: string(cfgHash)}, perm, "from-the-configuration", "status.password_hash", ""},
		{"configured password", config.Status{Password: "from-the-configuration"}, perm, "from-the-configuration", "status.password", ""},
		{"none", config.Status{}, filepath.Join(dir, "missing"), "", "", "no control password on this box"},
		{"a plain password is not a hash", config.Status{}, plain, "", "", "not a bcrypt hash"},
		{"bad configured hash", config.Status{PasswordHash: "secret"}, perm, "", "", "status.password_hash: not a bcrypt hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LoadPassword(tc.st, tc.file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || p.Set() {
					t.Fatalf("= %v (set %v), want an error saying %q", err, p.Set(), tc.err)
				}
				return
			}
			if err != nil || p.Source() != tc.source || !p.Check(tc.good) || p.Check(tc.good+"x") {
				t.Fatalf("source %q, %v", p.Source(), err)
			}
		})
	}
}
