package forwarderapi

import (
	"context"
	"testing"
	"time"

	"github.com/ncpos/ncpos/health"
	"github.com/ncpos/ncpos/ipc"
)

// TestClient reads a forwarderd's status, health and metrics through its
// socket, and says it is not running when none listens.
func TestClient(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	c := NewClient(dir, time.Second)
	if _, err := c.Status(ctx); err == nil || !ipc.NotRunning(err) {
		t.Fatalf("no forwarderd: error %v, want one saying it is not running", err)
	}

	want := Status{Engine: "xdp", Segments: []SegmentStatus{{Name: "seg1", Forwarding: true}}}
	h := ipc.Handler(func() health.Report {
		return health.Report{Daemon: Name, Live: health.Live(time.Now()),
			Conditions: []health.Condition{{Kind: health.TxStalled, Segment: "seg1", Port: "LAN2"}}}
	}, func() any { return want }, nil)
	done := make(chan error, 1)
	go func() { done <- ipc.Serve(ctx, dir, Name, h) }()
	for deadline := time.Now().Add(5 * time.Second); c.Live(ctx) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("forwarderd stand-in did not come up")
		}
	}
	st, err := c.Status(ctx)
	if err != nil || st.Engine != "xdp" || len(st.Segments) != 1 || !st.Segments[0].Forwarding {
		t.Errorf("Status = %+v, %v; want %+v", st, err, want)
	}
	r, err := c.Health(ctx)
	if err != nil || !r.Live.Live || !health.Has(r.Conditions, health.TxStalled) {
		t.Errorf("Health = %+v, %v; want live with tx_stalled", r, err)
	}
	cancel()
	<-done
}
