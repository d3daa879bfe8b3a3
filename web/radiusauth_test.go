package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/freeradiustest"
	"github.com/ncpos/ncpos/web/api"
)

const radiusUsers = `radmin Cleartext-Password := "radmin-radius-password"
	Class := "ncpos-admin"
rop Cleartext-Password := "rop-radius-password"
	Filter-Id := "ncpos-operator"
rview Cleartext-Password := "rview-radius-password"
	Class := "ncpos-viewer"
rnone Cleartext-Password := "rnone-radius-password"
ada Cleartext-Password := "ada-radius-password"
	Class := "ncpos-viewer"
`

// TestRADIUSSignIn signs in through Debian's FreeRADIUS: the role comes
// from the reply, no role and a rejection open nothing (not even a local
// account of the same name), and the local accounts sign in only while
// no server answers, which is logged.
func TestRADIUSSignIn(t *testing.T) {
	const secret = "fw1-radius-secret"
	fr := freeradiustest.Start(t, radiusUsers, secret)
	f := newFixture(t, fixtureOpts{})
	withAccounts(t, f)
	auth := config.Auth{RADIUS: []config.RADIUSServer{{Server: fr.Addr, Secret: secret}}, Timeout: config.Duration{Duration: 300 * time.Millisecond},
		Retries: 0, AdminClass: "ncpos-admin", OperatorClass: "ncpos-operator", ViewerClass: "ncpos-viewer"}
	f.srv.Auth.UseRADIUS(auth, "ncpos-lab")
	f.srv.guard()

	timed := func(method, path, user, pw, body string) (*httpResult, time.Duration) {
		start := time.Now()
		r := f.send(method, path, basic(user, pw), body)
		return r, time.Since(start)
	}
	r, radiusCost := timed("GET", "/api/v1/whoami", "radmin", "radmin-radius-password", "")
	var who api.Whoami
	json.Unmarshal([]byte(r.Body), &who)
	if r.Code != 200 || who != (api.Whoami{Name: "radmin", Role: "admin", Method: "radius"}) {
		t.Fatalf("radmin: %d %s", r.Code, r.Body)
	}
	_, remembered := timed("GET", "/api/v1/whoami", "radmin", "radmin-radius-password", "")
	for _, tc := range []struct {
		method, path, user, pw, body string
		code                         int
		says                         string
	}{
		{"GET", "/api/v1/accounts", "radmin", "radmin-radius-password", "", 200, "vera"},
		{"POST", "/api/v1/control/bypass", "rop", "rop-radius-password", `{"segment":"seg1","state":"bypass","reason":"radius test"}`, 200, ""},
		{"GET", "/api/v1/config", "rop", "rop-radius-password", "", 403, "this needs the admin role: rop is an operator"},
		{"POST", "/api/v1/control/reboot", "rview", "rview-radius-password", `{"reason":"x"}`, 403, "this needs the operator role: rview is a viewer"},
		{"GET", "/api/v1/status", "rnone", "rnone-radius-password", "", 401, ""},
		{"GET", "/api/v1/status", "rview", "a-wrong-password", "", 401, ""},
		// ada is a local admin, but RADIUS knows her with another
		// password: a rejection is final.
		{"GET", "/api/v1/accounts", "ada", rolePassword, "", 401, ""},
		{"GET", "/api/v1/accounts", "ada", "ada-radius-password", "", 403, "ada is a viewer"},
		{"POST", "/api/v1/control/password", "rview", "rview-radius-password", `{"new_password":"another-long-password"}`, 403, "kept by the RADIUS server"},
		// Not known to RADIUS, so not signed in, although ncpos is local.
		{"GET", "/api/v1/status", "ncpos", fixturePassword, "", 401, ""},
	} {
		r := f.send(tc.method, tc.path, basic(tc.user, tc.pw), tc.body)
		if r.Code != tc.code || !strings.Contains(r.Body, tc.says) {
			t.Errorf("%s %s as %s: %d %s, want %d %q", tc.method, tc.path, tc.user, r.Code, r.Body, tc.code, tc.says)
		}
	}
	if !hasEvent(f.events.Recent(200), events.KindLogin, `login of "rnone" refused: refused by the RADIUS server `+fr.Addr+`: the answer names no role`) {
		t.Error("no event says why rnone was refused")
	}
	if !anyEvent(f.events.Recent(200), "rop@") {
		t.Error("no event names rop as who forced the bypass")
	}

	// The server stops: the local accounts sign in, and it is logged
	// once per account.
	fr.Stop()
	r, outage := timed("GET", "/api/v1/status", "vera", rolePassword, "")
	if r.Code != 200 {
		t.Fatalf("vera during the outage: %d %s", r.Code, r.Body)
	}
	_, local := timed("GET", "/api/v1/status", "otto", rolePassword, "")
	for i := 0; i < 3; i++ {
		f.send("GET", "/api/v1/status", basic("vera", rolePassword), "")
	}
	if r := f.send("GET", "/api/v1/status", basic("rnone", "rnone-radius-password"), ""); r.Code != 401 {
		t.Errorf("a RADIUS-only user during the outage: %d", r.Code)
	}
	// A login RADIUS accepted within radiusRemember still signs in.
	if r := f.send("GET", "/api/v1/status", basic("rview", "rview-radius-password"), ""); r.Code != 200 {
		t.Errorf("rview, accepted a moment ago, during the outage: %d", r.Code)
	}
	evs := f.events.Recent(200)
	if !hasEvent(evs, events.KindLogin, "no RADIUS server answered") || !hasEvent(evs, events.KindLogin, "vera signed in with its local password: no RADIUS server answers") {
		t.Errorf("the fallback is not logged: %+v", evs)
	}
	n := 0
	for _, e := range evs {
		if strings.Contains(e.Message, "vera signed in with its local password") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("vera's fallback logged %d times, want once", n)
	}
	t.Logf("a login's cost here: RADIUS round trip %v (remembered afterwards: %v); a local bcrypt check (cost 10) %v; "+
		"the first login of an outage, the port refused at once, %v",
		radiusCost.Round(time.Microsecond), remembered.Round(time.Microsecond), local.Round(time.Microsecond), outage.Round(time.Millisecond))
}

// anyEvent says whether an event's message or fields contain s.
func anyEvent(evs []events.Event, s string) bool {
	for _, e := range evs {
		if strings.Contains(e.Message, s) {
			return true
		}
		for _, v := range e.Fields {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}
