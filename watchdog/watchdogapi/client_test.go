package watchdogapi

import (
	"context"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/ipc/ipctest"
)

// TestClientStatus reads a watchdogd's status through its socket, and
// says it is not running when none listens.
func TestClientStatus(t *testing.T) {
	ctx := context.Background()
	if _, err := NewClient(t.TempDir(), time.Second).Status(ctx); err == nil || !ipc.NotRunning(err) {
		t.Fatalf("no watchdogd: error %v, want one saying it is not running", err)
	}

	want := Status{Device: "/dev/watchdog", TimeoutSec: 10, Petting: true, Checks: []CheckState{{Name: "forwarderd", OK: true}},
		LastReset: LastReset{Kind: "watchdog", Detail: "statusd /healthz failing"}}
	dir := ipctest.Serve(t, Name, ipc.Handler(func() health.Report { return health.Report{Daemon: Name, Live: health.Live(time.Now())} },
		func() any { return want }, nil))
	got, err := NewClient(dir, time.Second).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Device != want.Device || got.TimeoutSec != 10 || !got.Petting || len(got.Checks) != 1 || got.Checks[0].Name != "forwarderd" || got.LastReset.Kind != "watchdog" {
		t.Errorf("Status = %+v, want %+v", got, want)
	}
}
