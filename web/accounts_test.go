package web

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/browsertest"
	"github.com/ncpos/ncpos/web/accounts"
	"github.com/ncpos/ncpos/web/api"
)

// The fixture's accounts besides ncpos, one per role.
const rolePassword = "role-account-password"

var roleAccounts = map[accounts.Role]string{accounts.Viewer: "vera", accounts.Operator: "otto", accounts.Admin: "ada"}

// withAccounts gives the fixture an accounts store with vera, otto and
// ada, and reading that needs a viewer.
func withAccounts(t *testing.T, f *fixture) *accounts.Store {
	t.Helper()
	st, err := accounts.Load(filepath.Join(t.TempDir(), "accounts.json"), accounts.Options{Builtin: f.srv.Auth.builtin, Now: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	for role, name := range roleAccounts {
		if err := st.Add(name, role, rolePassword); err != nil {
			t.Fatal(err)
		}
	}
	f.srv.Auth.Accounts = st
	f.srv.Auth.AuthRead = true
	// These tests send every route as every role at once: a rate no
	// dashboard reaches.
	f.srv.Limits = Limits{Rate: 1e6, Burst: 1e6}
	return st
}

// example turns a route's pattern into a request line.
func example(pattern string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "PUT", pattern
	}
	path = strings.NewReplacer("{$}", "", "{step}", "manifest", "{name}", "nobody").Replace(path)
	if strings.HasSuffix(path, "/static/") {
		path += "app.js"
	}
	return method, path
}

// TestRoutesNeedTheirRole sends every route of the table as each role:
// a role below the route's gets 403 naming the role it needs, the
// route's role and above get past the sign-in, and nobody gets in
// without one.
func TestRoutesNeedTheirRole(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	withAccounts(t, f)
	f.traffic(1, time.Second, nil, 64)
	for _, rt := range f.srv.routes() {
		method, path := example(rt.pattern)
		send := func(auth string) *httpResult {
			return f.do(newRequest(method, path, "", map[string]string{"Authorization": auth, "Content-Type": "application/json"}))
		}
		if rt.need == accounts.None {
			if r := send(""); r.Code == 401 || r.Code == 403 {
				t.Errorf("%s is open, but anonymous got %d: %s", rt.pattern, r.Code, r.Body)
			}
			continue
		}
		if r := send(""); r.Code != 401 {
			t.Errorf("%s anonymous (auth_read on): %d, want 401", rt.pattern, r.Code)
		}
		for role, name := range roleAccounts {
			r := send(basic(name, rolePassword))
			switch {
			case !role.Allows(rt.need):
				want := fmt.Sprintf("this needs the %s role: %s is %s", rt.need, name, role.Article())
				if r.Code != 403 || !strings.Contains(r.Body, want) {
					t.Errorf("%s as %s: %d %s, want 403 %q", rt.pattern, role, r.Code, r.Body, want)
				}
			case r.Code == 401 || r.Code == 403:
				t.Errorf("%s as %s: refused %d %s", rt.pattern, role, r.Code, r.Body)
			}
		}
	}
	// Without auth_read, what only reads is open, and the rest is not.
	f.srv.Auth.setAuthRead(false)
	for _, rt := range f.srv.routes() {
		method, path := example(rt.pattern)
		r := f.do(newRequest(method, path, "", map[string]string{"Content-Type": "application/json"}))
		open := rt.need == accounts.None || rt.read
		if refused := r.Code == 401; refused == open {
			t.Errorf("%s anonymous without auth_read: %d, open %v", rt.pattern, r.Code, open)
		}
	}
}

// TestRouteTableDocumented holds API.md's table of roles to the routes
// statusd serves: a route without a row, or a row that says another
// role, fails.
func TestRouteTableDocumented(t *testing.T) {
	b, err := os.ReadFile("API.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Roles of the routes\n")
	if !ok {
		t.Fatal(`API.md has no "### Roles of the routes" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n#")
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([a-z ,_]+) \\|")
	doc := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(sec, -1) {
		if _, dup := doc[m[1]]; dup {
			t.Errorf("API.md lists %s twice", m[1])
		}
		doc[m[1]] = strings.TrimSpace(m[2])
	}
	f := newFixture(t, fixtureOpts{})
	var served []string
	for _, rt := range f.srv.routes() {
		want := rt.need.String()
		switch {
		case rt.need == accounts.None:
			want = "anyone"
		case rt.read:
			want = "viewer, with auth_read"
		}
		served = append(served, rt.pattern)
		got, ok := doc[rt.pattern]
		switch {
		case !ok:
			t.Errorf("API.md's table of roles has no row for %s (%s)", rt.pattern, want)
		case got != want:
			t.Errorf("API.md says %s needs %q, statusd %q", rt.pattern, got, want)
		}
	}
	for p := range doc {
		if !slices.Contains(served, p) {
			t.Errorf("API.md lists %s, which statusd does not serve", p)
		}
	}
}

func (f *fixture) send(method, path, auth, body string) *httpResult {
	return f.do(newRequest(method, path, body, map[string]string{"Authorization": auth, "Content-Type": "application/json"}))
}

func TestAccountsAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	st := withAccounts(t, f)
	ada := basic("ada", rolePassword)
	for _, tc := range []struct {
		method, path, body string
		code               int
		says               string
	}{
		{"POST", "/api/v1/accounts", `{"name":"Bad Name","role":"viewer","password":"` + rolePassword + `"}`, 400, "name"},
		{"POST", "/api/v1/accounts", `{"name":"pat","role":"root","password":"` + rolePassword + `"}`, 400, "unknown role"},
		{"POST", "/api/v1/accounts", `{"name":"pat","role":"viewer","password":"short"}`, 400, "password"},
		{"POST", "/api/v1/accounts", `{"name":"vera","role":"viewer","password":"` + rolePassword + `"}`, 409, "exists"},
		{"POST", "/api/v1/accounts", `{"name":"pat","role":"operator","password":"` + rolePassword + `"}`, 200, "added"},
		{"POST", "/api/v1/accounts/pat", `{}`, 400, "nothing to change"},
		{"POST", "/api/v1/accounts/nobody", `{"role":"viewer"}`, 404, "nobody"},
		{"POST", "/api/v1/accounts/pat", `{"role":"viewer","password":"pat-new-password"}`, 200, "changed"},
		{"POST", "/api/v1/accounts/ncpos", `{"disabled":true}`, 200, "changed"},
		{"POST", "/api/v1/accounts/ada", `{"role":"operator"}`, 409, "at least one enabled admin"},
		{"DELETE", "/api/v1/accounts/ada", ``, 409, "at least one enabled admin"},
		{"POST", "/api/v1/tokens", `{"account":"otto","name":"ansible","role":"admin","expires_in":"24h"}`, 400, "at most operator"},
		{"POST", "/api/v1/tokens", `{"account":"otto","name":"ansible","role":"operator","expires_in":"forever"}`, 400, "expires_in"},
		{"POST", "/api/v1/tokens", `{"account":"otto","name":"ansible","role":"operator","expires_in":"87600h"}`, 400, "expiry"},
		{"DELETE", "/api/v1/tokens/none", ``, 404, "none"},
		{"DELETE", "/api/v1/accounts/pat", ``, 200, "removed"},
	} {
		r := f.send(tc.method, tc.path, ada, tc.body)
		if r.Code != tc.code || !strings.Contains(r.Body, tc.says) {
			t.Errorf("%s %s %s: %d %s, want %d %q", tc.method, tc.path, tc.body, r.Code, r.Body, tc.code, tc.says)
		}
	}
	if r := f.send("GET", "/api/v1/status", goodAuth, ""); r.Code != 401 {
		t.Errorf("disabled ncpos read the status: %d", r.Code)
	}
	var list struct{ Accounts []api.Account }
	if err := json.Unmarshal([]byte(f.send("GET", "/api/v1/accounts", ada, "").Body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Accounts) != 4 || list.Accounts[0].Name != "ncpos" || !list.Accounts[0].Disabled || list.Accounts[0].Password != "box" {
		t.Errorf("accounts: %+v", list.Accounts)
	}
	if strings.Contains(f.send("GET", "/api/v1/accounts", ada, "").Body, "$2") {
		t.Error("the account list shows a hash")
	}

	// A viewer token scrapes /metrics and does nothing more.
	r := f.send("POST", "/api/v1/tokens", ada, `{"account":"vera","name":"prometheus","role":"viewer","expires_in":"8760h"}`)
	var tok api.TokenCreated
	if err := json.Unmarshal([]byte(r.Body), &tok); err != nil || r.Code != 200 || !strings.HasPrefix(tok.Secret, accounts.TokenPrefix) {
		t.Fatalf("creating a token: %d %s", r.Code, r.Body)
	}
	bearer := "Bearer " + tok.Secret
	if r := f.send("GET", "/metrics", bearer, ""); r.Code != 200 || !strings.Contains(r.Body, "ncpos_") {
		t.Errorf("scrape with the token: %d", r.Code)
	}
	if r := f.send("POST", "/api/v1/control/reboot", bearer, `{"reason":"x"}`); r.Code != 403 || !strings.Contains(r.Body, "vera/prometheus is a viewer") {
		t.Errorf("reboot with a viewer token: %d %s", r.Code, r.Body)
	}
	if r := f.send("POST", "/api/v1/control/password", bearer, `{"new_password":"a-token-password"}`); r.Code != 403 {
		t.Errorf("a token changed a password: %d %s", r.Code, r.Body)
	}
	var who api.Whoami
	json.Unmarshal([]byte(f.send("GET", "/api/v1/whoami", bearer, "").Body), &who)
	if who != (api.Whoami{Name: "vera/prometheus", Role: "viewer", Method: "token"}) {
		t.Errorf("whoami with the token: %+v", who)
	}
	var toks struct{ Tokens []api.Token }
	json.Unmarshal([]byte(f.send("GET", "/api/v1/tokens", ada, "").Body), &toks)
	if len(toks.Tokens) != 1 || toks.Tokens[0].LastUsed.IsZero() || strings.Contains(f.send("GET", "/api/v1/tokens", ada, "").Body, tok.Secret) {
		t.Errorf("tokens: %+v", toks.Tokens)
	}
	if r := f.send("DELETE", "/api/v1/tokens/prometheus", ada, ""); r.Code != 200 {
		t.Fatalf("revoke: %d %s", r.Code, r.Body)
	}
	if r := f.send("GET", "/metrics", bearer, ""); r.Code != 401 {
		t.Errorf("scrape with a revoked token: %d", r.Code)
	}

	// Each account changes its own password.
	if r := f.send("POST", "/api/v1/control/password", basic("vera", rolePassword), `{"new_password":"vera-new-password"}`); r.Code != 200 {
		t.Fatalf("vera's own password: %d %s", r.Code, r.Body)
	}
	if _, err := st.CheckPassword("vera", "vera-new-password"); err != nil {
		t.Errorf("vera's new password: %v", err)
	}

	// Every change names who made it and from where.
	for _, want := range []string{
		"account pat added as an operator by ada@", "account pat made a viewer by ada@", "password of pat set by ada@",
		"account ncpos disabled by ada@", "account pat and its tokens removed by ada@",
		"token prometheus of vera created (viewer", "token prometheus of vera revoked by ada@", "password of vera changed by vera@",
	} {
		if !hasEvent(f.events.Recent(100), events.KindControl, want) {
			t.Errorf("no event %q", want)
		}
	}
}

// TestAuditTrail: every control action and every refusal names who,
// how they signed in, their role, where from, what and the result, in
// GET /api/v1/audit and as an event.
func TestAuditTrail(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	withAccounts(t, f)
	ada := basic("ada", rolePassword)
	r := f.send("POST", "/api/v1/tokens", ada, `{"account":"otto","name":"ansible","role":"operator","expires_in":"1h"}`)
	var tok api.TokenCreated
	json.Unmarshal([]byte(r.Body), &tok)
	steps := []struct{ method, path, auth, body string }{
		{"POST", "/api/v1/control/reboot", basic("vera", rolePassword), `{"reason":"x"}`},
		{"GET", "/api/v1/config", basic("vera", "a-wrong-password"), ""},
		{"POST", "/api/v1/control/bypass", "Bearer " + tok.Secret, `{"segment":"seg1","state":"bypass","reason":"maintenance"}`},
		{"POST", "/api/v1/control/bypass", basic("otto", rolePassword), `{"segment":"nope","state":"bypass","reason":"x"}`},
		{"GET", "/api/v1/status", basic("vera", rolePassword), ""},
		{"GET", "/api/v1/config", ada, ""},
	}
	for _, s := range steps {
		f.send(s.method, s.path, s.auth, s.body)
	}
	var got struct{ Audit []api.AuditEntry }
	if err := json.Unmarshal([]byte(f.send("GET", "/api/v1/audit?limit=6", ada, "").Body), &got); err != nil {
		t.Fatal(err)
	}
	want := []api.AuditEntry{
		{Name: "ada", Method: "password", Role: "admin", Action: "GET /api/v1/config", Status: 503, Result: "failed"}, // the fixture serves no configuration
		{Name: "otto", Method: "password", Role: "operator", Action: "POST /api/v1/control/bypass", Status: 404, Result: "failed"},
		{Name: "otto/ansible", Method: "token", Role: "operator", Action: "POST /api/v1/control/bypass", Status: 200, Result: "ok"},
		{Name: "vera", Method: "password", Action: "GET /api/v1/config", Status: 401, Result: "refused: wrong user, password or token"},
		{Name: "vera", Method: "password", Role: "viewer", Action: "POST /api/v1/control/reboot", Status: 403, Result: "refused: this needs the operator role: vera is a viewer"},
		{Name: "ada", Method: "password", Role: "admin", Action: "POST /api/v1/tokens", Status: 200, Result: "ok"},
	}
	if len(got.Audit) != len(want) {
		t.Fatalf("audit: %+v", got.Audit)
	}
	for i, w := range want {
		g := got.Audit[i]
		w.Time, w.From = g.Time, "192.0.2.1"
		if g != w || g.Time.IsZero() {
			t.Errorf("audit[%d] = %+v\nwant %+v", i, g, w)
		}
	}
	if !hasEvent(f.events.Recent(50), events.KindAudit, "vera (password, viewer) from 192.0.2.1: POST /api/v1/control/reboot: 403 refused: this needs the operator role") {
		t.Error("no audit event for vera's refused reboot")
	}
	if r := f.send("GET", "/api/v1/audit", basic("otto", rolePassword), ""); r.Code != 403 {
		t.Errorf("an operator read the audit: %d", r.Code)
	}
}

// TestBrowserRoles signs in to the dashboard as each role: a viewer sees
// no control but its own password, an operator bypass, reboot and the
// self-test, an admin everything and the Accounts page, where it makes a
// token whose secret is shown once.
func TestBrowserRoles(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	withAccounts(t, f)
	f.srv.Auth.AuthRead = false // the page loads without a prompt; the form signs in
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	b, _ := loadDashboard(t, ts.URL+"/", 1)
	const el = `document.getElementById`
	// visible lists the enabled buttons a person can see in the control
	// form and the accounts page, and whether the configuration shows.
	const visible = `(() => [...document.querySelectorAll('#control button, #accounts-section button, #cfg-load')].filter((e) => e.offsetParent !== null).map((e) => e.id || e.textContent).join(' '))()`
	saw := map[string]string{}
	for _, tc := range []struct{ name, role, want string }{
		{"vera", "viewer", "c-signin c-rotate"},
		{"otto", "operator", "c-signin c-apply c-rotate c-reboot s-run"},
		{"ada", "admin", "cfg-load c-signin c-apply c-rotate c-reboot i-find i-start p-start p-stop s-run"},
	} {
		js := `(() => { ` + el + `('c-user').value = '` + tc.name + `'; ` + el + `('c-password').value = '` + rolePassword + `'; ` + el + `('c-signin').click(); return 1 })()`
		if _, err := b.Eval(js, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := b.Wait(el+`('whoami').textContent === 'signed in as `+tc.name+` (`+tc.role+`, password)'`, 30*time.Second); err != nil {
			t.Fatalf("signing in as %s: %v", tc.name, err)
		}
		if tc.role == "admin" {
			if err := b.Wait(`document.querySelectorAll('#accounts tbody tr').length === 4`, 30*time.Second); err != nil {
				t.Fatalf("the accounts page: %v", err)
			}
		}
		got, err := b.Eval(visible, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		saw[tc.role] = got
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s sees %q, want %q first", tc.role, got, tc.want)
		}
		t.Logf("%s sees: %s", tc.role, got)
	}
	if !strings.Contains(saw["admin"], "a-add t-create") || !strings.Contains(saw["admin"], "Remove…") || strings.Contains(saw["operator"], "a-add") {
		t.Errorf("the accounts page: admin %q, operator %q", saw["admin"], saw["operator"])
	}
	js := `(() => { ` + el + `('t-account').value = 'vera'; ` + el + `('t-name').value = 'grafana'; ` + el + `('t-create').click(); return 1 })()`
	if _, err := b.Eval(js, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(el+`('t-secret').textContent.includes('ncpos_') && document.querySelector('#tokens tr[data-token="grafana"]') !== null && `+
		`[...document.querySelectorAll('#audit td')].some((td) => td.textContent === 'POST /api/v1/tokens')`, 30*time.Second); err != nil {
		out, _ := b.Eval(el+`('a-result').textContent`, 5*time.Second)
		t.Fatalf("creating a token on the page: %v; it says %s", err, out)
	}
	shot := filepath.Join(artifactDir(t), "accounts.png")
	os.Remove(shot)
	if n, err := b.Screenshot(shot, time.Minute); err != nil {
		t.Errorf("screenshot: %v", err)
	} else {
		t.Logf("screenshot: %s (%d bytes)", shot, n)
	}
}

// TestLoginBackoffPerAccount: guesses at one account spread over many
// addresses slow that account's logins, from anywhere, and no other
// account's; a source that guesses is slowed on its own as before.
func TestLoginBackoffPerAccount(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	withAccounts(t, f)
	guess := func(addr, user, pw string) *httpResult {
		return f.do(from(addr+":4000", newRequest("GET", "/api/v1/status", "", map[string]string{"Authorization": basic(user, pw)})))
	}
	for i := range 10 {
		if r := guess(fmt.Sprintf("198.51.100.%d", i+1), "ada", "a-guess-at-her-password"); r.Code != 401 {
			t.Fatalf("guess %d: %d %s", i+1, r.Code, r.Body)
		}
	}
	r := guess("198.51.100.99", "ada", "another-guess-here")
	if r.Code != 401 {
		t.Fatalf("the 11th guess, the first past the free ones: %d", r.Code)
	}
	r = guess("198.51.100.100", "ada", rolePassword)
	if r.Code != 429 || !strings.Contains(r.Body, `too many failed logins for the account \"ada\"`) || r.Header.Get("Retry-After") == "" {
		t.Errorf("ada's login from a fresh address while her account backs off: %d %s", r.Code, r.Body)
	}
	if r := guess("198.51.100.100", "otto", rolePassword); r.Code != 200 {
		t.Errorf("otto, from the same fresh address: %d %s", r.Code, r.Body)
	}
}

// TestBrowserViewerSignedIn: with auth_read, the browser that signed in
// to see the page is the one shown, and a viewer sees no control.
func TestBrowserViewerSignedIn(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	withAccounts(t, f)
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	b := browsertest.Start(t, browsertest.Options{Headers: map[string]string{"Authorization": basic("vera", rolePassword)}})
	const ready = `polled >= 1 && document.getElementById('whoami').textContent === 'signed in as vera (viewer, password)'`
	if _, err := b.Load(ts.URL+"/", ready, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := b.Eval(`(() => [...document.querySelectorAll('button')].filter((e) => e.offsetParent !== null).map((e) => e.id).join(' '))()`, 10*time.Second)
	if err != nil || got != "c-signin c-rotate" {
		t.Errorf("a viewer sees the buttons %q (%v), want only c-signin c-rotate", got, err)
	}
}

// TestTokenWithoutControlPassword: a box whose control password is gone
// (a damaged /perm, say) and that has no other account enabled is still
// reached with a token of ncpos.
func TestTokenWithoutControlPassword(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	st := withAccounts(t, f)
	for _, name := range roleAccounts {
		if err := st.SetDisabled(name, true); err != nil {
			t.Fatal(err)
		}
	}
	secret, _, err := st.CreateToken(accounts.Builtin, "scrape", accounts.Viewer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Auth.Password = &Password{}
	if r := f.send("GET", "/api/v1/status", "Bearer "+secret, ""); r.Code != 200 {
		t.Errorf("a token on a box without its control password: %d %s", r.Code, r.Body)
	}
	if r := f.send("GET", "/api/v1/status", basic("ncpos", fixturePassword), ""); r.Code != 401 {
		t.Errorf("ncpos's old password on a box without it: %d", r.Code)
	}
}
