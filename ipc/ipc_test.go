package ipc

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
)

func TestClientServer(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var stale atomic.Bool
	h := Handler(func() health.Report {
		r := health.Report{Daemon: "testd", Live: health.Live(time.Now()),
			Conditions: []health.Condition{{Kind: health.LinkDown, Segment: "seg1", Port: "LAN2", Detail: "down"}}}
		if stale.Load() {
			r.Live = health.Live(time.Now(), health.Problem{Kind: health.HeartbeatStale, Detail: "last 9s ago"})
		}
		return r
	}, func() any {
		return map[string]int{"answer": 42}
	}, nil)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, dir, "testd", h) }()

	c := NewClient(dir, "testd", time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for c.Live(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A condition is not a liveness problem.
	r, err := c.Report(ctx)
	if err != nil || !r.Live.Live || len(r.Conditions) != 1 || r.Conditions[0].Kind != health.LinkDown {
		t.Fatalf("Report = %+v, %v", r, err)
	}

	stale.Store(true)
	err = c.Live(ctx)
	var nl *NotLiveError
	if !errors.As(err, &nl) || nl.Liveness.Problems[0].Kind != health.HeartbeatStale {
		t.Fatalf("Live = %v, want a NotLiveError with the daemon's problem", err)
	}

	var st struct{ Answer int }
	if err := c.Status(ctx, &st); err != nil {
		t.Fatal(err)
	}
	if st.Answer != 42 {
		t.Fatalf("status answer = %d, want 42", st.Answer)
	}
	if _, err := c.Metrics(ctx); err == nil {
		t.Fatal("Metrics on a daemon without metrics succeeded")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestClientMissingDaemon(t *testing.T) {
	c := NewClient(t.TempDir(), "nobody", time.Second)
	err := c.Live(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nobody") || !NotRunning(err) {
		t.Fatalf("Live of a missing daemon = %v, want a not-running error naming it", err)
	}
	var nl *NotLiveError
	if errors.As(err, &nl) {
		t.Fatal("a missing daemon is reported as answering")
	}
}

// TestWriteJSONCode: a value is answered with its code, and one that
// cannot be encoded with a 500 that says why, its header written once.
func TestWriteJSONCode(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSONCode(rec, http.StatusAccepted, map[string]int{"n": 1})
	if rec.Code != http.StatusAccepted || rec.Body.String() != "{\n  \"n\": 1\n}\n" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("answered %d %q (%s)", rec.Code, rec.Body, rec.Header().Get("Content-Type"))
	}
	rec = httptest.NewRecorder()
	WriteJSONCode(rec, http.StatusOK, math.Inf(1))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "encoding the answer: json: unsupported value: +Inf") {
		t.Errorf("an unencodable value: answered %d %q", rec.Code, rec.Body)
	}
}
