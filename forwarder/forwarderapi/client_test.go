package forwarderapi

import (
	"context"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/ipc/ipctest"
)

// TestClient reads a forwarderd's status and health through its socket,
// and says it is not running when none listens.
func TestClient(t *testing.T) {
	ctx := context.Background()
	if _, err := NewClient(t.TempDir(), time.Second).Status(ctx); err == nil || !ipc.NotRunning(err) {
		t.Fatalf("no forwarderd: error %v, want one saying it is not running", err)
	}

	want := Status{Engine: "xdp", Segments: []SegmentStatus{{Name: "seg1", Forwarding: true}}}
	dir := ipctest.Serve(t, Name, ipc.Handler(func() health.Report {
		return health.Report{Daemon: Name, Live: health.Live(time.Now()),
			Conditions: []health.Condition{{Kind: health.TxStalled, Segment: "seg1", Port: "LAN2"}}}
	}, func() any { return want }, nil))
	c := NewClient(dir, time.Second)
	st, err := c.Status(ctx)
	if err != nil || st.Engine != "xdp" || len(st.Segments) != 1 || !st.Segments[0].Forwarding {
		t.Errorf("Status = %+v, %v; want %+v", st, err, want)
	}
	r, err := c.Health(ctx)
	if err != nil || !r.Live.Live || !health.Has(r.Conditions, health.TxStalled) {
		t.Errorf("Health = %+v, %v; want live with tx_stalled", r, err)
	}
}
