package update

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

// overrideBox is a statusd that records the bypass overrides it is asked
// for: two segments with a relay, one without.
type overrideBox struct {
	mu   sync.Mutex
	sets []map[string]string // every POST /api/v1/control/bypass, in order
}

func (b *overrideBox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v1/segments":
		json.NewEncoder(w).Encode(map[string]any{"segments": []api.Segment{
			{Name: "seg1", BypassPair: "pair1"}, {Name: "seg2", BypassPair: "pair2"}, {Name: "seg3"},
		}})
	case "/api/v1/control/bypass":
		var req map[string]string
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		b.mu.Lock()
		b.sets = append(b.sets, req)
		b.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}

func (b *overrideBox) taken() []map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.sets)
}

// The update's overrides last a lease the client renews while it runs:
// set for the lease, set again every fifth of it, and no more once the
// renewal stops, so that a client that dies leaves them to expire.
func TestBypassLease(t *testing.T) {
	box := &overrideBox{}
	srv := httptest.NewServer(box)
	defer srv.Close()
	c := &Client{StatusURL: srv.URL + "/"}
	const lease = time.Second
	done, err := c.Bypass(context.Background(), "ncpos update to b", lease)
	if !slices.Equal(done, []string{"seg1", "seg2"}) || err == nil || err.Error() != "segment seg3 has no bypass relay" {
		t.Fatalf("Bypass: %v, %v; want seg1 and seg2 overridden and seg3 reported", done, err)
	}
	for _, set := range box.taken() {
		if set["state"] != "bypass" || set["expires_in"] != lease.String() || set["reason"] != "ncpos update to b" {
			t.Errorf("override %v, want bypass for %v", set, lease)
		}
	}
	stop := c.RenewBypass(context.Background(), done, "ncpos update to b", lease, t.Logf)
	time.Sleep(lease + lease/10) // five renewals of each, give or take one
	stop()
	stop() // a second stop does nothing
	n := len(box.taken())
	renewals := n - 2
	if renewals < 4 || renewals > 12 {
		t.Errorf("%d renewals of two segments in %v, want about five each", renewals, lease+lease/10)
	}
	for _, set := range box.taken()[2:] {
		if set["state"] != "bypass" || set["expires_in"] != lease.String() || (set["segment"] != "seg1" && set["segment"] != "seg2") {
			t.Errorf("renewal %v, want seg1 or seg2 in bypass for %v", set, lease)
		}
	}
	time.Sleep(lease / 2)
	if m := len(box.taken()); m != n {
		t.Errorf("%d more overrides after the renewal stopped", m-n)
	}
	if err := c.EndBypass(context.Background(), done); err != nil {
		t.Fatal(err)
	}
	for _, set := range box.taken()[n:] {
		if set["state"] != "auto" {
			t.Errorf("ending the overrides sent %v, want state auto", set)
		}
	}
}
