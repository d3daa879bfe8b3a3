package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/change"
	"github.com/ncpos/ncpos/web/configapi"
)

// changeFixture serves fixtureConfig from a file that changes take, with
// forwarderd's part taken by a function that counts and bypassd's by one
// that does nothing.
func changeFixture(t *testing.T) (*fixture, *change.Manager, *int) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	dir := t.TempDir()
	store, err := versions.Open(filepath.Join(dir, "versions"), versions.DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(run, []byte(fixtureConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	taken := new(int)
	m := &change.Manager{Store: store, RunConfig: run, PermConfig: filepath.Join(dir, "ncpos.toml"), Source: "/etc/ncpos/ncpos.toml",
		Takers: map[string]change.Taker{config.TakerForwarder: change.TakerFunc(func(context.Context) error { *taken++; return nil }),
			config.TakerBypass: change.TakerFunc(func(context.Context) error { return nil })},
		TrialConfig: filepath.Join(dir, "trial.toml"), Reboot: f.srv.Rebooter.Reboot}
	f.srv.Configs = &configapi.Configs{InForce: func() ([]byte, error) { return os.ReadFile(run) }, Versions: store, Changes: m}
	return f, m, taken
}

func TestConfigApplyConfirmRollback(t *testing.T) {
	f, m, taken := changeFixture(t)
	next := strings.Replace(fixtureConfig, "bypass = \"pair2\"\n", "bypass = \"pair2\"\nmtu = 9000\n", 1)
	if r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: next}, ""); r.Code != 401 {
		t.Errorf("apply without the password: %d", r.Code)
	}
	r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: next, Comment: "jumbo on seg2"}, goodAuth)
	res := decode[api.ConfigApplied](t, r)
	if r.Code != 200 || res.Version.Number != 2 || res.Version.State != api.VersionPending || res.Version.By != "ncpos" ||
		res.Version.Comment != "jumbo on seg2" || *taken != 1 || len(res.Changes) != 1 {
		t.Fatalf("apply = %d %s (taken %d times)", r.Code, r.Body, *taken)
	}
	if d := res.Version.Deadline.Sub(res.Version.Time); d < change.DefaultConfirmWithin-5e9 || d > change.DefaultConfirmWithin+5e9 {
		t.Errorf("deadline %v after the apply, want the default %v", d, change.DefaultConfirmWithin)
	}
	cur := decode[api.ConfigInForce](t, f.configCall("GET", "/api/v1/config", nil, goodAuth))
	if cur.Version != 2 || cur.Text != next {
		t.Errorf("in force after the apply: version %d", cur.Version)
	}
	// Conflicts say why with a word and the version in force.
	for _, c := range []struct {
		body   any
		path   string
		code   int
		reason string
	}{
		{api.ConfigApply{Text: fixtureConfig, Replaces: 2}, "apply", 409, api.ConfigBusy},
		{api.ConfigVersionRef{Version: 1}, "confirm", 409, api.ConfigNotFound},
		{api.ConfigRollback{Version: 9}, "rollback", 404, api.ConfigNotFound},
	} {
		r := f.configCall("POST", "/api/v1/config/"+c.path, c.body, goodAuth)
		if got := decode[api.ConfigConflict](t, r); r.Code != c.code || got.Reason != c.reason || got.Version != 2 {
			t.Errorf("%s %+v: %d %s, want %d %s with version 2", c.path, c.body, r.Code, r.Body, c.code, c.reason)
		}
	}
	r = f.configCall("POST", "/api/v1/config/confirm", api.ConfigVersionRef{Version: 2}, goodAuth)
	if v := decode[api.Version](t, r); r.Code != 200 || v.State != api.VersionConfirmed {
		t.Fatalf("confirm = %d %s", r.Code, r.Body)
	}
	for _, c := range []struct {
		body   api.ConfigApply
		reason string
	}{
		{api.ConfigApply{Text: fixtureConfig, Replaces: 1}, api.ConfigStale},
		{api.ConfigApply{Text: next, Replaces: 2}, api.ConfigUnchanged},
		{api.ConfigApply{Text: next + "[watchdog]\ndevice = \"/dev/watchdog1\"\n", Replaces: 2}, api.ConfigRefused},
		{api.ConfigApply{Text: next + "[snmp]\ncommunity = \"long-enough\"\n", Replaces: 2}, api.ConfigRefused},
	} {
		r := f.configCall("POST", "/api/v1/config/apply", c.body, goodAuth)
		if got := decode[api.ConfigConflict](t, r); r.Code != 409 || got.Reason != c.reason || got.Version != 2 {
			t.Errorf("apply replacing %d: %d %s, want 409 %s", c.body.Replaces, r.Code, r.Body, c.reason)
		}
	}
	if r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: "hostname = 3\n", Replaces: 2}, goodAuth); r.Code != 422 {
		t.Errorf("an invalid candidate: %d %s", r.Code, r.Body)
	}
	bad := -1
	if r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: fixtureConfig, Replaces: 2, ConfirmWithin: &bad}, goodAuth); r.Code != 400 {
		t.Errorf("a negative deadline: %d %s", r.Code, r.Body)
	}
	// A rollback is an apply of the old text, with its own deadline;
	// reverted by hand, the box is back on version 2.
	within := 60
	r = f.configCall("POST", "/api/v1/config/rollback", api.ConfigRollback{Version: 1, Replaces: 2, ConfirmWithin: &within}, goodAuth)
	res = decode[api.ConfigApplied](t, r)
	if r.Code != 200 || res.Version.Number != 3 || res.Version.Comment != "rollback to version 1" || res.Version.State != api.VersionPending {
		t.Fatalf("rollback = %d %s", r.Code, r.Body)
	}
	if text, n, _ := m.InForce(); n != 3 || string(text) != fixtureConfig {
		t.Errorf("after the rollback version %d is in force", n)
	}
	r = f.configCall("POST", "/api/v1/config/revert", api.ConfigVersionRef{Version: 3}, goodAuth)
	if v := decode[api.Version](t, r); r.Code != 200 || v.State != api.VersionReverted || !strings.Contains(v.Reason, "reverted by ncpos@") {
		t.Fatalf("revert = %d %s", r.Code, r.Body)
	}
	if _, n, _ := m.InForce(); n != 2 {
		t.Errorf("after the revert version %d is in force, want 2", n)
	}
	h := decode[api.ConfigHistory](t, f.configCall("GET", "/api/v1/config/history", nil, goodAuth))
	if len(h.Versions) != 3 || h.Pending != 0 {
		t.Fatalf("history: %+v", h)
	}
	if v := h.Versions[1]; v.Number != 2 || !strings.Contains(v.Diff, "+mtu = 9000") || !strings.Contains(v.Diff, "--- version 1") {
		t.Errorf("history of version 2: %+v", v)
	}
	if v := h.Versions[2]; v.Number != 1 || v.Source != "/etc/ncpos/ncpos.toml" || v.State != api.VersionConfirmed {
		t.Errorf("history of version 1: %+v", v)
	}
	f.srv.Configs.Changes = nil
	if r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: next, Replaces: 2}, goodAuth); r.Code != 503 {
		t.Errorf("apply on a box that takes no change: %d", r.Code)
	}
}

// TestBrowserConfig drives the dashboard's configuration section in
// headless Chromium as an operator would: load the configuration in
// force, see a broken candidate's problems, check and plan a change,
// apply it with a confirm deadline, see the countdown, and confirm it.
func TestBrowserConfig(t *testing.T) {
	f, m, taken := changeFixture(t)
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	b, _ := loadDashboard(t, ts.URL+"/", 1)
	step := func(what, js, ready string) {
		t.Helper()
		if _, err := b.Eval(`(() => { `+js+`; return 1 })()`, 30*time.Second); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := b.Wait(ready, 30*time.Second); err != nil {
			out, _ := b.Eval(`document.getElementById('cfg-out').textContent`, 10*time.Second)
			t.Fatalf("%s: %v; the page says: %s", what, err, out)
		}
	}
	const el = `document.getElementById`
	step("load", el+`('c-password').value = '`+fixturePassword+`'; `+el+`('cfg-load').click()`,
		el+`('cfg-text').value.includes('name = "seg2"')`)
	step("a broken candidate", el+`('cfg-text').value += 'bogus = 1\n'; `+el+`('cfg-check').click()`,
		el+`('cfg-out').textContent.includes('bogus: unknown key')`)
	next := strings.Replace(fixtureConfig, "bypass = \"pair2\"\n", "bypass = \"pair2\"\nmtu = 9000\n", 1)
	step("check", el+`('cfg-text').value = `+jsString(next)+`; `+el+`('cfg-check').click()`,
		el+`('cfg-out').textContent === 'the box takes this configuration'`)
	step("plan", el+`('cfg-plan').click()`, el+`('cfg-out').textContent.includes('segment[seg2]: re-attach (forwarderd) seg2: changed: mtu 1522 -> 9000')`)
	step("apply", `window.confirm = () => true; `+el+`('cfg-comment').value = 'jumbo on seg2'; `+el+`('cfg-apply').click()`,
		`!`+el+`('cfg-banner').hidden && /Version 2 waits for its confirmation: the box goes back to version 1 in (9|10):\d\d/.test(`+el+`('cfg-countdown').textContent)`)
	if p, ok := m.Pending(); !ok || p.Number != 2 || p.Comment != "jumbo on seg2" || *taken != 1 {
		t.Fatalf("after the page applied: pending %+v (%v), forwarderd took %d changes", p, ok, *taken)
	}
	shot := filepath.Join(artifactDir(t), "config.png")
	os.Remove(shot)
	if n, err := b.Screenshot(shot, time.Minute); err != nil {
		t.Errorf("screenshot: %v", err)
	} else {
		t.Logf("screenshot: %s (%d bytes)", shot, n)
	}
	step("confirm", el+`('cfg-confirm').click()`,
		el+`('cfg-banner').hidden && document.querySelector('#cfg-history tr[data-version="2"] [data-field=state]').textContent === 'confirmed' && `+
			el+`('cfg-inforce').textContent.startsWith('in force: version 2, applied by ncpos from 127.0.0.1')`)
	if _, ok := m.Pending(); ok {
		t.Error("still pending after the page confirmed it")
	}

	// Only a reboot takes plain HTTP off: the page says so before it
	// applies it, and the box reboots.
	off := next + "[status]\nhttp_port = 0\n"
	step("apply by a reboot", `window.confirm = (m) => { window.asked = m; return true }; `+el+`('cfg-text').value = `+jsString(off)+`; `+el+`('cfg-apply').click()`,
		el+`('cfg-out').textContent.includes('version 3 applied (pending): the box reboots to take it')`)
	asked, _ := b.Eval(`window.asked`, 10*time.Second)
	f.mu.Lock()
	reboots := f.reboots
	f.mu.Unlock()
	if p, ok := m.Pending(); !ok || p.Number != 3 || !p.Reboot || !strings.Contains(fmt.Sprint(asked), "Only a reboot takes it") || len(reboots) != 1 {
		t.Errorf("after the page applied a change only a reboot takes: pending %+v (%v), the page asked %q, reboots %q", p, ok, asked, reboots)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestConfigApplyOutlastsWriteTimeout: a change the daemons take longer
// to take than the server's WriteTimeout is still answered, over TLS:
// the answer waits as long as the change may take.
func TestConfigApplyOutlastsWriteTimeout(t *testing.T) {
	f, m, _ := changeFixture(t)
	m.Takers[config.TakerForwarder] = change.TakerFunc(func(context.Context) error {
		time.Sleep(700 * time.Millisecond)
		return nil
	})
	ts := httptest.NewUnstartedServer(f.srv.Handler())
	ts.Config.WriteTimeout = 200 * time.Millisecond
	ts.StartTLS()
	defer ts.Close()
	c := &api.Client{URL: ts.URL + "/", Password: fixturePassword, HTTP: ts.Client()}
	next := strings.Replace(fixtureConfig, "bypass = \"pair2\"\n", "bypass = \"pair2\"\nmtu = 9000\n", 1)
	res, err := c.ApplyConfig(context.Background(), api.ConfigApply{Text: next, Comment: "slow to take"})
	if err != nil {
		t.Fatalf("an apply taken in 700 ms behind a 200 ms WriteTimeout: %v", err)
	}
	if res.Version.Number != 2 {
		t.Errorf("applied version %d, want 2", res.Version.Number)
	}
	v, err := c.RevertConfig(context.Background(), 2)
	if err != nil {
		t.Fatalf("a revert taken in 700 ms behind a 200 ms WriteTimeout: %v", err)
	}
	if v.State != api.VersionReverted {
		t.Errorf("version 2 after the revert: %s, want reverted", v.State)
	}
}

// TestRADIUSSecretsStayOnTheBox: the configuration API shows a RADIUS
// secret as set, never its value, in the text, the plan's diff and the
// history's; a candidate that keeps the placeholder keeps the secret.
func TestRADIUSSecretsStayOnTheBox(t *testing.T) {
	f, m, _ := changeFixture(t)
	m.Takers[config.TakerStatus] = change.TakerFunc(func(context.Context) error { return nil })
	const secret = "the-radius-secret-of-fw1"
	withRADIUS := fixtureConfig + "[auth]\nradius = [{server = \"192.0.2.10\", secret = \"" + secret + "\"}]\n"
	if r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: withRADIUS}, goodAuth); r.Code != 200 || strings.Contains(r.Body, secret) {
		t.Fatalf("apply with a secret: %d %s", r.Code, r.Body)
	}
	if r := f.configCall("POST", "/api/v1/config/confirm", api.ConfigVersionRef{Version: 2}, goodAuth); r.Code != 200 {
		t.Fatalf("confirm: %d %s", r.Code, r.Body)
	}
	cur := decode[api.ConfigInForce](t, f.configCall("GET", "/api/v1/config", nil, goodAuth))
	if strings.Contains(cur.Text, secret) || !strings.Contains(cur.Text, config.RedactedSecret) {
		t.Fatalf("GET /api/v1/config shows:\n%s", cur.Text)
	}
	// The text as shown, with a name added, applies and keeps the
	// secret.
	next := strings.Replace(cur.Text, "[auth]", "[status]\nnames = [\"fw1.example\"] # edited\n[auth]", 1)
	plan := f.configCall("POST", "/api/v1/config/plan", api.ConfigCandidate{Text: next}, goodAuth)
	if plan.Code != 200 || strings.Contains(plan.Body, secret) {
		t.Errorf("plan: %d %s", plan.Code, plan.Body)
	}
	r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: next, Replaces: 2}, goodAuth)
	if r.Code != 200 {
		t.Fatalf("apply of the text as shown: %d %s", r.Code, r.Body)
	}
	b, _ := os.ReadFile(f.srv.Configs.Changes.RunConfig)
	if !strings.Contains(string(b), `secret = "`+secret+`"`) || !strings.Contains(string(b), "# edited") {
		t.Errorf("the box runs on:\n%s", b)
	}
	// A placeholder for a server the box has no secret for is refused.
	other := strings.Replace(next, "192.0.2.10", "192.0.2.99", 1)
	if r := f.configCall("POST", "/api/v1/config/apply", api.ConfigApply{Text: other, Replaces: 3}, goodAuth); r.Code != 422 || !strings.Contains(r.Body, "192.0.2.99") {
		t.Errorf("a placeholder for another server: %d %s", r.Code, r.Body)
	}
	hist := f.configCall("GET", "/api/v1/config/history", nil, goodAuth)
	if hist.Code != 200 || strings.Contains(hist.Body, secret) || !strings.Contains(hist.Body, config.RedactedSecret) {
		t.Errorf("history: %d %s", hist.Code, hist.Body)
	}
}
