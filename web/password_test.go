package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/passwd"
)

// The operator rotates the box's password through the API: the new one
// is kept on /perm as a hash and works at once, the old one stops
// working, weak ones are refused, and a password the configuration sets
// cannot be rotated away.
func TestPasswordRotation(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	change := func(auth, body string) *httpResult {
		return f.do(newRequest("POST", "/api/v1/control/password", body,
			map[string]string{"Content-Type": "application/json", "Authorization": auth}))
	}
	status := func(auth string) int {
		f.srv.Auth.AuthRead = true
		defer func() { f.srv.Auth.AuthRead = false }()
		return f.do(newRequest("GET", "/api/v1/status", "", map[string]string{"Authorization": auth})).Code
	}
	if r := change(goodAuth, `{"new_password":"short"}`); r.Code != 400 || !strings.Contains(r.Body, "new_password: the password has 5 characters") {
		t.Fatalf("weak new password = %d %s, want 400 saying why", r.Code, r.Body)
	}
	if r := change(basic("ncpos", "not-the-password"), `{"new_password":"a-much-better-one"}`); r.Code != 401 {
		t.Fatalf("rotation with a wrong password = %d, want 401", r.Code)
	}
	if r := change(goodAuth, `{"new_password":"a-much-better-one"}`); r.Code != 200 {
		t.Fatalf("rotation = %d %s", r.Code, r.Body)
	}
	b, err := os.ReadFile(f.srv.Auth.Password.file)
	if err != nil || !passwd.Matches([]byte(strings.TrimSpace(string(b))), "a-much-better-one") || strings.Contains(string(b), "a-much-better-one") {
		t.Fatalf("kept on /perm: %q %v, want only the new password's hash", b, err)
	}
	if st, _ := os.Stat(f.srv.Auth.Password.file); st.Mode().Perm() != 0o600 {
		t.Errorf("password file mode %v, want 0600", st.Mode())
	}
	if code := status(basic("ncpos", "a-much-better-one")); code != 200 {
		t.Errorf("new password = %d, want 200", code)
	}
	if code := status(goodAuth); code != 401 {
		t.Errorf("old password after rotation = %d, want 401", code)
	}
	var found bool
	for _, e := range f.events.Recent(0) {
		found = found || (e.Kind == events.KindControl && e.Fields["action"] == "password")
	}
	if !found {
		t.Error("no control event for the rotation")
	}
	// A cross-site page cannot rotate it with the browser's credentials.
	r := f.do(newRequest("POST", "/api/v1/control/password", `{"new_password":"attacker-chosen-one"}`,
		map[string]string{"Content-Type": "application/json", "Authorization": basic("ncpos", "a-much-better-one"), "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}))
	if r.Code != 403 {
		t.Errorf("cross-site rotation = %d, want 403", r.Code)
	}

	// The configuration sets it: rotation refused, saying where to change it.
	h, _ := passwd.Hash("fleet-wide-password")
	p, err := LoadPassword(config.Status{PasswordHash: string(h)}, filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Auth.Password = p
	if r := change(basic("ncpos", "fleet-wide-password"), `{"new_password":"a-much-better-one"}`); r.Code != http.StatusConflict || !strings.Contains(r.Body, "status.password_hash in the configuration") {
		t.Errorf("rotation of a configured password = %d %s, want 409", r.Code, r.Body)
	}
	// /perm not writable: nothing changes.
	p, _ = LoadPassword(config.Status{}, filepath.Join("/proc", "ncpos-no-such-dir", "control-password"))
	p.hash, _ = passwd.Hash("perm-password-1")
	f.srv.Auth.Password = p
	if r := change(basic("ncpos", "perm-password-1"), `{"new_password":"a-much-better-one"}`); r.Code != 503 || !strings.Contains(r.Body, "the old password still works") {
		t.Errorf("rotation without /perm = %d %s, want 503", r.Code, r.Body)
	}
	if !p.Check("perm-password-1") {
		t.Error("a failed rotation changed the password")
	}
}
