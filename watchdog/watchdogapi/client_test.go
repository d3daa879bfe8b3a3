package watchdogapi

import (
	"context"
	"testing"
	"time"

	"github.com/ncpos/ncpos/health"
	"github.com/ncpos/ncpos/ipc"
)

// TestClientStatus reads a watchdogd's status through its socket, and
// says which daemon is missing when none listens.
func TestClientStatus(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	c := NewClient(dir, time.Second)
	if _, err := c.Status(ctx); err == nil || !ipc.NotRunning(err) {
		t.Fatalf("no watchdogd: error %v, want one saying it is not running", err)
	}

	want := Status{Device: "/dev/watchdog", TimeoutSec: 10, Petting: true, Checks: []CheckState{{Name: "forwarderd", OK: true}},
		LastReset: LastReset{Kind: "watchdog", Detail: "statusd /healthz failing"}}
	h := ipc.Handler(func() health.Report { return health.Report{Daemon: Name, Live: health.Live(time.Now())} },
		func() any { return want }, nil)
	done := make(chan error, 1)
	go func() { done <- ipc.Serve(ctx, dir, Name, h) }()
	var got Status
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got, err = c.Status(ctx); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if got.Device != want.Device || got.TimeoutSec != 10 || !got.Petting || len(got.Checks) != 1 || got.Checks[0].Name != "forwarderd" || got.LastReset.Kind != "watchdog" {
		t.Errorf("Status = %+v, want %+v", got, want)
	}
	cancel()
	<-done
}
