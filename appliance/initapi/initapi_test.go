package initapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/ipctest"
)

// TestClientReconfigure asks init through its socket, and says it is not
// running when none listens.
func TestClientReconfigure(t *testing.T) {
	ctx := context.Background()
	if _, err := NewClient(t.TempDir(), time.Second).Reconfigure(ctx); err == nil || !ipc.NotRunning(err) {
		t.Fatalf("no socket: error %v, want one saying init is not running", err)
	}
	mux := ipc.Handler(ipc.AlwaysLive(Name), func() any { return nil }, nil)
	mux.HandleFunc("POST /reconfigure", func(w http.ResponseWriter, r *http.Request) {
		ipc.WriteJSON(w, Reconfigured{Hostname: "ncpos-7", Management: Management{Interface: "eth0", Addresses: []string{"192.0.2.10/24"}}})
	})
	got, err := NewClient(ipctest.Serve(t, Name, mux), time.Second).Reconfigure(ctx)
	if err != nil || got.Hostname != "ncpos-7" || got.Management.Addresses[0] != "192.0.2.10/24" {
		t.Errorf("Reconfigure = %+v, %v", got, err)
	}
}
