package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/fleet"
	"github.com/ncpos/ncpos/web/api"
)

// captureStdout runs f with standard output going to a string.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	ferr := f()
	os.Stdout = old
	w.Close()
	return <-done, ferr
}

// The fleet commands on a box with auth_read: add pins it and records
// it, status reads it with its recorded password, sd exports it, and a
// box that went away makes status fail after its line.
func TestFleetCommands(t *testing.T) {
	cfgDir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgDir)
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ncpos" || p != "fw1-password-long" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(api.Snapshot{
			Summary:  api.Summary{State: "ok"},
			System:   &api.System{BuildID: "b-42", UptimeSeconds: 61},
			Segments: []api.Segment{{Name: "seg1", BypassPair: "pair1", Bypass: &api.BypassState{State: "normal"}, Forwarding: &api.SegmentForwarding{Healthy: true}}},
		})
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	srv.StartTLS()
	defer srv.Close()
	os.MkdirAll(filepath.Join(cfgDir, "ncpos", "passwords"), 0o700)
	os.WriteFile(filepath.Join(cfgDir, "ncpos", "passwords", "fw1"), []byte("fw1-password-long\n"), 0o600)

	ctx := context.Background()
	addr := srv.Listener.Addr().String()
	out, err := captureStdout(t, func() error { return runFleet(ctx, []string{"add", "-name", "fw1", "-address", addr}) })
	if err != nil || !strings.Contains(out, "fw1 at "+addr+": build b-42, ok") {
		t.Fatalf("fleet add: %v\n%s", err, out)
	}
	if fp, ok, _ := (&boxtls.Known{Path: filepath.Join(cfgDir, "ncpos", "known_boxes")}).Get("fw1"); !ok || fp != id.Fingerprint {
		t.Fatalf("fleet add pinned %q, want %s", fp, id.Fingerprint)
	}
	out, err = captureStdout(t, func() error { return runFleet(ctx, []string{"status"}) })
	if err != nil || !strings.Contains(out, "fw1") || !strings.Contains(out, "yes, up 1m1s") || !strings.Contains(out, "seg1 (forwarding, relay normal)") {
		t.Fatalf("fleet status: %v\n%s", err, out)
	}
	sd := filepath.Join(t.TempDir(), "sd")
	out, err = captureStdout(t, func() error { return runFleet(ctx, []string{"sd", "-dir", sd}) })
	if err != nil || !strings.Contains(out, "1 boxes in") {
		t.Fatalf("fleet sd: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(sd, fleet.TargetsFile)); !strings.Contains(string(b), addr) {
		t.Fatalf("targets: %s", b)
	}

	srv.Close()
	out, err = captureStdout(t, func() error { return runFleet(ctx, []string{"status"}) })
	if err == nil || !strings.Contains(err.Error(), "1 of 1 boxes not reachable") || !strings.Contains(out, "fw1") || !strings.Contains(out, "no: ") {
		t.Fatalf("fleet status with the box gone: %v\n%s", err, out)
	}
	out, err = captureStdout(t, func() error { return runFleet(ctx, []string{"list"}) })
	if err != nil || !strings.Contains(out, "b-42") || !strings.Contains(out, id.Fingerprint[:20]) {
		t.Fatalf("fleet list: %v\n%s", err, out)
	}
	if err := runFleet(ctx, []string{"remove", "fw1"}); err != nil {
		t.Fatal(err)
	}
	if err := runFleet(ctx, []string{"bogus"}); err == nil || !strings.Contains(err.Error(), `unknown fleet command "bogus"`) {
		t.Fatalf("unknown command: %v", err)
	}
}
