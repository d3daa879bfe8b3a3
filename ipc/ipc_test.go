package ipc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestClientServer(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var failing error
	h := Handler(func() error { return failing }, func() any {
		return map[string]int{"answer": 42}
	}, nil)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, dir, "testd", h) }()

	c := NewClient(dir, "testd", time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for c.Health(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}

	failing = errors.New("datapath stalled")
	err := c.Health(ctx)
	if err == nil || !strings.Contains(err.Error(), "datapath stalled") {
		t.Fatalf("Health = %v, want the daemon's reason", err)
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
	err := c.Health(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("Health of a missing daemon = %v, want an error naming it", err)
	}
}
