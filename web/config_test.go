package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/configapi"
)

// configFixture serves fixtureConfig as the configuration in force, with
// a history on a temporary /perm.
func configFixture(t *testing.T) (*fixture, *versions.Store) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	store, err := versions.Open(t.TempDir(), versions.DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Configs = &configapi.Configs{InForce: func() ([]byte, error) { return []byte(fixtureConfig), nil }, Source: "/etc/ncpos/ncpos.toml", Versions: store}
	return f, store
}

func (f *fixture) configCall(method, path string, body any, auth string) *httpResult {
	f.t.Helper()
	var b string
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		b = string(j)
	}
	h := map[string]string{"Content-Type": "application/json"}
	if auth != "" {
		h["Authorization"] = auth
	}
	return f.do(newRequest(method, path, b, h))
}

func decode[T any](t *testing.T, r *httpResult) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		t.Fatalf("%v\n%s", err, r.Body)
	}
	return v
}

func TestConfigInForce(t *testing.T) {
	f, store := configFixture(t)
	if r := f.configCall("GET", "/api/v1/config", nil, ""); r.Code != 401 {
		t.Errorf("GET /api/v1/config without the password: %d, want 401", r.Code)
	}
	r := f.configCall("GET", "/api/v1/config", nil, goodAuth)
	cur := decode[api.ConfigInForce](t, r)
	if r.Code != 200 || cur.Text != fixtureConfig || cur.Version != 0 || cur.Source != "/etc/ncpos/ncpos.toml" || cur.SHA256 != versions.Sum([]byte(fixtureConfig)) {
		t.Errorf("GET /api/v1/config = %d %+v", r.Code, cur)
	}
	// A version of the same text names it.
	if _, err := store.Add([]byte(fixtureConfig), versions.Version{By: "ncpos", From: "192.0.2.7", State: versions.Confirmed}); err != nil {
		t.Fatal(err)
	}
	cur = decode[api.ConfigInForce](t, f.configCall("GET", "/api/v1/config", nil, goodAuth))
	if cur.Version != 1 || cur.By != "ncpos" || cur.From != "192.0.2.7" {
		t.Errorf("with a version: %+v", cur)
	}
}

// TestConfigCheck: every problem of a candidate, as `file:line: field:
// what is wrong`, in one answer.
func TestConfigCheck(t *testing.T) {
	f, _ := configFixture(t)
	bad := strings.Replace(fixtureConfig, `hostname = "ncpos-lab"`, `hostname = "-bad-"`+"\nbogus = 1", 1) +
		"[snmp]\nport = \"161\"\n"
	r := f.configCall("POST", "/api/v1/config/check", api.ConfigCandidate{Text: bad}, goodAuth)
	res := decode[api.ConfigCheck](t, r)
	if r.Code != 200 || res.Valid || len(res.Errors) != 3 {
		t.Fatalf("check = %d %+v, want three problems", r.Code, res)
	}
	for i, want := range []string{"ncpos.toml:2: hostname: ", "ncpos.toml:3: bogus: unknown key", "ncpos.toml:14: snmp.port: got string \"161\", want an integer"} {
		if !strings.HasPrefix(res.Errors[i].Message, want) {
			t.Errorf("problem %d: %q, want it to start %q", i, res.Errors[i].Message, want)
		}
	}
	if res.Errors[1].Line != 3 || res.Errors[1].Field != "bogus" {
		t.Errorf("problem 1: %+v", res.Errors[1])
	}
	res = decode[api.ConfigCheck](t, f.configCall("POST", "/api/v1/config/check", api.ConfigCandidate{Text: fixtureConfig}, goodAuth))
	if !res.Valid || len(res.Errors) != 0 {
		t.Errorf("check of a good file: %+v", res)
	}
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"text": 3}`, 400},
		{`{"txt": ""}`, 400},
		{`{"text": "` + strings.Repeat("x", configapi.MaxConfigBytes) + `"}`, 413},
	} {
		r := f.do(newRequest("POST", "/api/v1/config/check", c.body, map[string]string{"Content-Type": "application/json", "Authorization": goodAuth}))
		if r.Code != c.code || !strings.Contains(r.Body, `"error"`) {
			t.Errorf("body %.30s: %d %s, want %d", c.body, r.Code, r.Body, c.code)
		}
	}
}

func TestConfigPlan(t *testing.T) {
	f, _ := configFixture(t)
	next := strings.Replace(fixtureConfig, `hostname = "ncpos-lab"`, `hostname = "edge-7"`, 1)
	next = strings.Replace(next, `name = "seg2"`, `name = "seg3"`, 1) + "[watchdog]\ndevice = \"/dev/watchdog1\"\n[snmp]\ncommunity = \"n0c-view\"\n"
	r := f.configCall("POST", "/api/v1/config/plan", api.ConfigCandidate{Text: next}, goodAuth)
	if r.Code != 200 {
		t.Fatalf("plan = %d %s", r.Code, r.Body)
	}
	plan := decode[api.ConfigPlan](t, r)
	var got []string
	for _, c := range plan.Changes {
		got = append(got, c.Setting+": "+string(c.Effect))
	}
	want := []string{"hostname: in place", "watchdog.device: reboot", "snmp.community: in place", "segment[seg3]: re-attach", "segment[seg2]: re-attach"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") || plan.Disturbs != api.EffectReboot || plan.Version != 0 {
		t.Errorf("plan %q, disturbs %q, version %d; want %q, reboot, 0", got, plan.Disturbs, plan.Version, want)
	}
	// Neither seg3, added, nor seg2, removed, is re-attached; seg1,
	// changed, is out of the datapath for the default re-attach time (no
	// change measured one on this box).
	if plan.Changes[3].AwayMS != 0 || plan.Changes[4].AwayMS != 0 {
		t.Errorf("segments added and removed have a time out of the datapath: %+v, %+v", plan.Changes[3], plan.Changes[4])
	}
	mtu := strings.Replace(fixtureConfig, "bypass = \"pair1\"\n", "bypass = \"pair1\"\nmtu = 9000\n", 1)
	p2 := decode[api.ConfigPlan](t, f.configCall("POST", "/api/v1/config/plan", api.ConfigCandidate{Text: mtu}, goodAuth))
	if len(p2.Changes) != 1 || p2.Changes[0].AwayMS != 1000 || !strings.Contains(p2.Changes[0].Detail, "seg1 out of the datapath for about 1000 ms") {
		t.Errorf("seg1's MTU: %+v, want seg1 out of the datapath for about 1000 ms", p2.Changes)
	}
	for _, line := range []string{`-hostname = "ncpos-lab"`, `+hostname = "edge-7"`, `-name = "seg2"`, `+name = "seg3"`} {
		if !strings.Contains(plan.Diff, line) {
			t.Errorf("diff lacks %q:\n%s", line, plan.Diff)
		}
	}
	r = f.configCall("POST", "/api/v1/config/plan", api.ConfigCandidate{Text: "hostname = 3\n"}, goodAuth)
	if res := decode[api.ConfigCheck](t, r); r.Code != 422 || res.Valid || len(res.Errors) == 0 {
		t.Errorf("plan of an invalid candidate: %d %s", r.Code, r.Body)
	}
	f.srv.Configs = nil
	if r := f.configCall("POST", "/api/v1/config/plan", api.ConfigCandidate{Text: next}, goodAuth); r.Code != 503 {
		t.Errorf("plan without a configuration: %d", r.Code)
	}
}
