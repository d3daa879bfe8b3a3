package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
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
	var asked []string
	args, dir := configBox(t, func(w http.ResponseWriter, r *http.Request) {
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
			json.NewEncoder(w).Encode(api.ConfigPlan{Version: 3, Disturbs: api.EffectInPlace, Diff: "-hostname = \"fw1\"\n+hostname = \"fw2\"\n",
				Changes: []api.Change{{Setting: "hostname", Effect: api.EffectInPlace, Taker: config.TakerInit}}})
		}
	})
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
		{[]string{"frobnicate"}, `unknown config command "frobnicate"`},
		{[]string{"confirm"}, "needs -version N"},
		{[]string{"apply", "-file", good, "-confirm-within", "1500ms"}, "whole seconds"},
		{[]string{"apply", "-file", good, "-confirm-within", "10s"}, "-watch 20s must be shorter"},
		{[]string{"check", "-file", good, "-host", ""}, "-host is required"},
	} {
		if err := runConfig(ctx, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestConfigApplyCommand: apply shows the plan, asks once, applies with
// the deadline asked for and confirms only after the box has answered
// again; -no-confirm leaves the change waiting; a refusal is said in the
// box's words; history lists the versions.
func TestConfigApplyCommand(t *testing.T) {
	var asked []string
	busy := false
	state4, why4 := api.VersionPending, ""
	reads := 0 // of the configuration in force: a reboot taking version 5 is done on the second
	args, dir := configBox(t, func(w http.ResponseWriter, r *http.Request) {
		var req api.ConfigApply
		json.NewDecoder(r.Body).Decode(&req)
		line := r.Method + " " + r.URL.Path
		if r.URL.Path == "/api/v1/config/apply" {
			line += fmt.Sprintf(" replaces %d within %d", req.Replaces, *req.ConfirmWithin)
			if req.Reboot {
				line += " reboot"
			}
		}
		asked = append(asked, line)
		switch r.URL.Path {
		case "/api/v1/config":
			if reads++; reads > 1 {
				json.NewEncoder(w).Encode(api.ConfigInForce{Text: "platform = \"qemu\"\n", Version: 5})
				return
			}
			json.NewEncoder(w).Encode(api.ConfigInForce{Text: "hostname = \"fw1\"\n", Version: 3})
		case "/api/v1/config/plan":
			if strings.Contains(req.Text, "platform") {
				json.NewEncoder(w).Encode(api.ConfigPlan{Version: 3, Disturbs: api.EffectReboot, Diff: "+platform = \"qemu\"\n",
					Changes: []api.Change{{Setting: "platform", Effect: api.EffectReboot, Detail: "only at boot"}}})
				return
			}
			json.NewEncoder(w).Encode(api.ConfigPlan{Version: 3, Disturbs: api.EffectInPlace, Diff: "+hostname = \"fw2\"\n",
				Changes: []api.Change{{Setting: "hostname", Effect: api.EffectInPlace, Taker: config.TakerInit}}})
		case "/api/v1/config/apply":
			if req.Reboot {
				json.NewEncoder(w).Encode(api.ConfigApplied{Version: api.Version{Number: 5, Parent: 3, State: api.VersionPending, Reboot: true,
					Deadline: time.Now().Add(time.Minute)}, Rebooting: true})
				return
			}
			if busy {
				w.WriteHeader(http.StatusConflict)
				json.NewEncoder(w).Encode(api.ConfigConflict{Error: "a change waits for its confirmation: version 4", Reason: api.ConfigBusy, Version: 4})
				return
			}
			json.NewEncoder(w).Encode(api.ConfigApplied{Version: api.Version{Number: 4, Parent: 3, State: api.VersionPending,
				Deadline: time.Now().Add(time.Minute)}, TookMS: map[string]float64{"init": 2}})
		case "/api/v1/config/confirm":
			json.NewEncoder(w).Encode(api.Version{Number: 4, State: api.VersionConfirmed})
		case "/api/v1/config/history":
			json.NewEncoder(w).Encode(api.ConfigHistory{Versions: []api.ConfigVersion{
				{Version: api.Version{Number: 4, State: state4, By: "ncpos", From: "192.0.2.7", Reason: why4}, Diff: "+hostname = \"fw2\""},
				{Version: api.Version{Number: 3, State: api.VersionConfirmed, By: "box", Comment: "the configuration the box booted on"}}}})
		}
	})
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("hostname = \"fw2\"\n"), 0o600)
	host := args[1]
	ctx := context.Background()
	run := func(in string, extra ...string) (string, error) {
		asked = nil
		return captureStdout(t, func() error { return runConfigWith(ctx, append(extra, args...), strings.NewReader(in)) })
	}

	out, err := run("n\n", "apply", "-file", good)
	if err == nil || !strings.Contains(err.Error(), "not applied") || !strings.Contains(out, "hostname                 in place (init)") ||
		strings.Join(asked, ";") != "POST /api/v1/config/plan" {
		t.Errorf("apply answered no: %v\n%s\nasked %q", err, out, asked)
	}
	out, err = run("y\n", "apply", "-file", good, "-confirm-within", "90s", "-watch", "1ms")
	want := "POST /api/v1/config/plan;POST /api/v1/config/apply replaces 3 within 90;GET /api/v1/config/history;POST /api/v1/config/confirm"
	if err != nil || strings.Join(asked, ";") != want || !strings.Contains(out, "version 4 applied (pending); taken in init 2 ms") ||
		!strings.Contains(out, "version 4 confirmed") {
		t.Errorf("apply: %v\n%s\nasked %q, want %q", err, out, asked, want)
	}
	out, err = run("", "apply", "-file", good, "-yes", "-no-confirm")
	if err != nil || strings.Contains(strings.Join(asked, ";"), "confirm") || !strings.Contains(out, "ncpos config confirm -host "+host+" -version 4") {
		t.Errorf("apply -no-confirm: %v\n%s\nasked %q", err, out, asked)
	}
	if _, err := run("", "apply", "-file", good); err == nil || !strings.Contains(err.Error(), "give -yes") {
		t.Errorf("apply without an answer: %v", err)
	}
	// Only a reboot takes it: refused without -reboot; with it, the
	// change is confirmed once the box answers on it after the reboot.
	platform := filepath.Join(dir, "platform.toml")
	os.WriteFile(platform, []byte("platform = \"qemu\"\n"), 0o600)
	if _, err := run("", "apply", "-file", platform, "-yes"); err == nil || !strings.Contains(err.Error(), "give -reboot") || len(asked) != 1 {
		t.Errorf("apply of a change only a reboot takes, without -reboot: %v, asked %q", err, asked)
	}
	out, err = run("", "apply", "-file", platform, "-yes", "-reboot", "-watch", "1ms")
	want = "POST /api/v1/config/plan;POST /api/v1/config/apply replaces 3 within 600 reboot;GET /api/v1/config;GET /api/v1/config/history;GET /api/v1/config;GET /api/v1/config/history;POST /api/v1/config/confirm"
	if err != nil || strings.Join(asked, ";") != want || !strings.Contains(out, "the box reboots to take it") || !strings.Contains(out, "the box answers on version 5") {
		t.Errorf("apply -reboot: %v\n%s\nasked %q, want %q", err, out, asked, want)
	}

	// The box reverted it meanwhile: not confirmed, and said so.
	state4, why4 = api.VersionReverted, "the box did not run well on it for 15s: segment seg1 forwarded before, now link_down"
	if _, err := run("", "apply", "-file", good, "-yes", "-watch", "1ms"); err == nil || !strings.Contains(err.Error(), "the box reverted version 4: the box did not run well") ||
		strings.Contains(strings.Join(asked, ";"), "confirm") {
		t.Errorf("apply of a change the box reverted: %v, asked %q", err, asked)
	}
	why4 = "not confirmed by its deadline"
	busy = true
	if _, err := run("", "apply", "-file", good, "-yes"); err == nil || err.Error() != "a change waits for its confirmation: version 4 (version 4 is in force)" {
		t.Errorf("apply while one waits: %v", err)
	}
	out, err = run("", "history", "-diff")
	if err != nil || !strings.Contains(out, "   4  reverted ") || !strings.Contains(out, "ncpos from 192.0.2.7 [not confirmed by its deadline]") ||
		!strings.Contains(out, "+hostname = \"fw2\"") || !strings.Contains(out, "box: the configuration the box booted on") {
		t.Errorf("history: %v\n%s", err, out)
	}
	if out, err := run("", "confirm", "-version", "4"); err != nil || out != "version 4 confirmed: the box boots on it\n" {
		t.Errorf("confirm: %v\n%s", err, out)
	}
}

// configBox serves h as box fw1 over HTTPS with a box's identity, and
// returns the flags that reach it (its password in a file) and a folder
// for the test's files.
func configBox(t *testing.T, h http.HandlerFunc) (args []string, dir string) {
	t.Helper()
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir = t.TempDir()
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("fw1-password-long\n"), 0o600)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return []string{"-host", host, "-status-port", port, "-password-file", pw, "-fingerprint", id.Fingerprint, "-known", filepath.Join(dir, "known")}, dir
}
