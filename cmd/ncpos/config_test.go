package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/web/api"
)

// TestConfigCommands: get prints the text in force, check prints the
// box's problems under the file's own name and fails, plan prints the
// changes and the diff.
func TestConfigCommands(t *testing.T) {
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ncpos" || p != "fw1-password-long" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req api.ConfigCandidate
		json.NewDecoder(r.Body).Decode(&req)
		asked = append(asked, r.Method+" "+r.URL.Path+" "+req.Text)
		switch r.URL.Path {
		case "/api/v1/config":
			json.NewEncoder(w).Encode(api.ConfigInForce{Text: "hostname = \"fw1\"\n", Version: 3, By: "ncpos", From: "192.0.2.7", Source: "/perm/ncpos/ncpos.toml"})
		case "/api/v1/config/check":
			if strings.Contains(req.Text, "bad") {
				json.NewEncoder(w).Encode(api.ConfigCheck{Errors: []api.ConfigError{
					{Line: 1, Field: "hostname", Message: "ncpos.toml:1: hostname: bad"},
					{Line: 2, Field: "x", Message: "ncpos.toml:2: x: unknown key"}}})
				return
			}
			json.NewEncoder(w).Encode(api.ConfigCheck{Valid: true})
		case "/api/v1/config/plan":
			if strings.Contains(req.Text, "bad") {
				w.WriteHeader(http.StatusUnprocessableEntity)
				json.NewEncoder(w).Encode(api.ConfigRefusal{Error: "the candidate has 1 problem(s)", ConfigCheck: api.ConfigCheck{
					Errors: []api.ConfigError{{Line: 1, Field: "hostname", Message: "ncpos.toml:1: hostname: bad"}}}})
				return
			}
			json.NewEncoder(w).Encode(api.ConfigPlan{Version: 3, Disturbs: config.EffectInPlace, Diff: "-hostname = \"fw1\"\n+hostname = \"fw2\"\n",
				Changes: []config.Change{{Setting: "hostname", Effect: config.EffectInPlace, Taker: config.TakerInit}}})
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("fw1-password-long\n"), 0o600)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	args := []string{"-host", host, "-status-port", port, "-password-file", pw, "-fingerprint", id.Fingerprint, "-known", filepath.Join(dir, "known")}
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o600)
		return p
	}
	ctx := context.Background()

	out, err := captureStdout(t, func() error { return runConfig(ctx, append([]string{"get"}, args...)) })
	if err != nil || out != "hostname = \"fw1\"\n" {
		t.Errorf("config get: %v\n%s", err, out)
	}
	bad := file("bad.toml", "hostname = \"bad\"\nx = 1\n")
	out, err = captureStdout(t, func() error { return runConfig(ctx, append([]string{"check", "-file", bad}, args...)) })
	if err == nil || !strings.Contains(err.Error(), "2 problem(s)") || !strings.Contains(out, bad+":1: hostname: bad\n"+bad+":2: x: unknown key") {
		t.Errorf("config check of a bad file: %v\n%s", err, out)
	}
	out, err = captureStdout(t, func() error { return runConfig(ctx, append([]string{"plan", "-file", bad}, args...)) })
	if err == nil || !strings.Contains(err.Error(), "1 problem(s)") || out != bad+":1: hostname: bad\n" {
		t.Errorf("config plan of a bad file: %v\n%s", err, out)
	}
	good := file("good.toml", "hostname = \"fw2\"\n")
	out, err = captureStdout(t, func() error { return runConfig(ctx, append([]string{"plan", "-file", good}, args...)) })
	if err != nil || !strings.Contains(out, "in place of version 3") || !strings.Contains(out, "hostname                 in place (init)") || !strings.Contains(out, "+hostname = \"fw2\"") {
		t.Errorf("config plan: %v\n%s", err, out)
	}
	if want := "POST /api/v1/config/plan hostname = \"fw2\"\n"; asked[len(asked)-1] != want {
		t.Errorf("last request %q, want %q", asked[len(asked)-1], want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan"}, "-file is required"},
		{[]string{"get", "-file", good}, "takes no -file"},
		{[]string{"apply"}, `unknown config command "apply"`},
		{[]string{"check", "-file", good, "-host", ""}, "-host is required"},
	} {
		if err := runConfig(ctx, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
