package bypassapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/ipc/ipctest"
)

// TestClient drives a bypassd stand-in through the client: the requests
// arrive typed where bypassd's handlers read them, and each answer is
// bypassd's status.
func TestClient(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var got []string
	st := Status{Pairs: []PairStatus{{Name: "pair1", State: Normal}}}
	mux := http.NewServeMux()
	mux.Handle("/", ipc.Handler(func() health.Report { return health.Report{Daemon: Name, Live: health.Live(time.Now())} },
		func() any { return st }, nil))
	answer := func(w http.ResponseWriter, what string) {
		mu.Lock()
		got = append(got, what)
		mu.Unlock()
		ipc.WriteJSON(w, st)
	}
	mux.HandleFunc("POST /override", func(w http.ResponseWriter, r *http.Request) {
		var req OverrideRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, "override "+req.Pair+" "+string(req.State)+" "+req.For+" "+req.By)
	})
	mux.HandleFunc("DELETE /override", func(w http.ResponseWriter, r *http.Request) {
		answer(w, "clear "+r.URL.Query().Get("pair")+" "+r.URL.Query().Get("by"))
	})
	mux.HandleFunc("POST /planned", func(w http.ResponseWriter, r *http.Request) {
		var req PlanRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, "plan "+req.Kind+" "+req.Reason)
	})
	c := NewClient(ipctest.Serve(t, Name, mux), time.Second)
	if s, err := c.Status(ctx); err != nil || len(s.Pairs) != 1 || s.Pairs[0].State != Normal {
		t.Errorf("Status = %+v, %v", s, err)
	}
	if s, err := c.Override(ctx, OverrideRequest{Pair: "pair1", State: Bypass, Reason: "x", For: "30m0s", By: "ncpos"}); err != nil || len(s.Pairs) != 1 {
		t.Errorf("Override = %+v, %v", s, err)
	}
	if _, err := c.ClearOverride(ctx, "pair1", "ncpos"); err != nil {
		t.Error(err)
	}
	if _, err := c.Plan(ctx, PlanReboot, "maintenance"); err != nil {
		t.Error(err)
	}
	want := []string{"override pair1 bypass 30m0s ncpos", "clear pair1 ncpos", "plan reboot maintenance"}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("bypassd saw %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: bypassd saw %q, want %q", i, got[i], want[i])
		}
	}
}
