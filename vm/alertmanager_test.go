package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/monitoring"
)

// alertmanager is Debian's prometheus-alertmanager with the shipped
// monitoring/alertmanager.yml, routing every alert at once (group_wait 0s)
// to a webhook receiver in the test: what a NOC's chat bridge or ticketing
// system would get.
type alertmanager struct {
	Addr string // host:port Prometheus sends alerts to

	mu       sync.Mutex
	received []webhookAlert
}

// webhookAlert is one alert of a webhook delivery, with when it arrived.
type webhookAlert struct {
	Status   string            `json:"status"`
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	Arrived  time.Time         `json:"-"`
}

func startAlertmanager(t *testing.T) *alertmanager {
	t.Helper()
	bin := testenv.LookPath(t, testenv.Tools, "prometheus-alertmanager", "prometheus-alertmanager")
	am := &alertmanager{}
	hook, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Alerts []webhookAlert `json:"alerts"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			t.Errorf("webhook: %v", err)
			http.Error(w, err.Error(), 400)
			return
		}
		now := time.Now()
		am.mu.Lock()
		for _, a := range msg.Alerts {
			a.Arrived = now
			am.received = append(am.received, a)
		}
		am.mu.Unlock()
	})}
	go srv.Serve(hook)
	t.Cleanup(func() { srv.Close() })

	dir := t.TempDir()
	// The shipped routing, its receiver the test's webhook and its
	// waits shortened as the rules' are.
	cfg := string(monitoring.Alertmanager)
	for old, new := range map[string]string{
		"http://noc.example.net:9099/ncpos": "http://" + hook.Addr().String() + "/alerts",
		"group_wait: 30s":                   "group_wait: 0s",
		"group_interval: 5m":                "group_interval: 1s",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("monitoring/alertmanager.yml has no %q", old)
		}
		cfg = strings.Replace(cfg, old, new, 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "alertmanager.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	am.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	// An empty cluster address keeps it a single instance, listening
	// nowhere but on the web address.
	startServer(t, "alertmanager", "http://"+am.Addr+"/-/ready", bin, "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "data"), "--web.listen-address="+am.Addr, "--cluster.listen-address=")
	return am
}

// wait returns the first alert delivered to the webhook after after with
// the given status and labels.
func (am *alertmanager) wait(t *testing.T, status string, labels map[string]string, after time.Time, within time.Duration) webhookAlert {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		am.mu.Lock()
		for _, a := range am.received {
			match := a.Status == status && a.Arrived.After(after)
			for k, v := range labels {
				match = match && a.Labels[k] == v
			}
			if match {
				am.mu.Unlock()
				return a
			}
		}
		n := len(am.received)
		am.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %s alert %v at the webhook within %v (%d alerts delivered)", status, labels, within, n)
		}
	}
}

// startServer runs a monitoring server of Debian's (prometheus,
// alertmanager) until the test ends, its output kept for a failing test,
// and waits until ready answers 200.
func startServer(t *testing.T, name, ready, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logFile := filepath.Join(t.TempDir(), name+".log")
	lf, err := os.Create(logFile)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Gone with the test binary, even after a timeout's panic.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		cancel()
		lf.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		lf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("%s log (tail):\n%s", name, tail(b, 3000))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become ready", name)
		}
	}
}
