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
	"github.com/ncpos/ncpos/web/verdict"
)

// overrideBox is a statusd that records the bypass overrides it is asked
// for: two segments with a relay, one without. Old, it refuses fields it
// does not know, as statusd does, and does not know the update mark.
type overrideBox struct {
	old  bool
	mu   sync.Mutex
	sets []map[string]any // every POST /api/v1/control/bypass taken, in order
	// overrides in force, by segment; forwarding says a segment
	// without one forwards.
	overrides  map[string]*api.Override
	forwarding bool
}

func (b *overrideBox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch r.URL.Path {
	case "/api/v1/segments":
		var segs []api.Segment
		for _, s := range []api.Segment{{Name: "seg1", BypassPair: "pair1"}, {Name: "seg2", BypassPair: "pair2"}, {Name: "seg3"}} {
			if s.BypassPair != "" {
				o := b.overrides[s.Name]
				s.Bypass = &api.BypassState{Segment: s.Name, Pair: s.BypassPair, State: "normal", Override: o}
				s.Forwarding = &api.SegmentForwarding{Healthy: o == nil && b.forwarding}
				if o != nil {
					s.Bypass.State = "bypass"
				}
			}
			segs = append(segs, s)
		}
		json.NewEncoder(w).Encode(map[string]any{"segments": segs})
	case "/api/v1/control/bypass":
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if _, ok := req["update"]; ok && b.old {
			http.Error(w, `{"error": "bad JSON: json: unknown field \"update\""}`, 400)
			return
		}
		b.sets = append(b.sets, req)
		seg, _ := req["segment"].(string)
		if req["state"] == "auto" {
			delete(b.overrides, seg)
		} else {
			if b.overrides == nil {
				b.overrides = map[string]*api.Override{}
			}
			b.overrides[seg] = &api.Override{State: "bypass", Reason: req["reason"].(string), Update: req["update"] == true}
		}
	default:
		http.NotFound(w, r)
	}
}

func (b *overrideBox) taken() []map[string]any {
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
	done, _, err := c.Bypass(context.Background(), "ncpos update to b", lease)
	if !slices.Equal(done, []string{"seg1", "seg2"}) || err == nil || err.Error() != "segment seg3 has no bypass relay" {
		t.Fatalf("Bypass: %v, %v; want seg1 and seg2 overridden and seg3 reported", done, err)
	}
	for _, set := range box.taken() {
		if set["state"] != "bypass" || set["expires_in"] != lease.String() || set["reason"] != "ncpos update to b" || set["update"] != true {
			t.Errorf("override %v, want bypass for %v, marked as an update's", set, lease)
		}
	}
	// The ticks come by hand: five renewals of each segment.
	ticks := make(chan time.Time)
	var period time.Duration
	c.ticker = func(d time.Duration) (<-chan time.Time, func()) { period = d; return ticks, func() {} }
	stop := c.RenewBypass(context.Background(), done, "ncpos update to b", lease, t.Logf)
	for range 5 {
		ticks <- time.Time{} // taken only once the renewal before it is done
	}
	for deadline := time.Now().Add(10 * time.Second); len(box.taken()) < 12 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	stop()
	stop() // a second stop does nothing
	if period != lease/5 {
		t.Errorf("renewed every %v, want a fifth of the lease (%v)", period, lease/5)
	}
	n := len(box.taken())
	if renewals := n - 2; renewals != 10 {
		t.Errorf("%d renewals of two segments after five ticks, want 10", renewals)
	}
	select {
	case ticks <- time.Time{}:
		t.Error("a tick was taken after the renewal stopped")
	default:
	}
	for _, set := range box.taken()[2:] {
		if set["state"] != "bypass" || set["expires_in"] != lease.String() || (set["segment"] != "seg1" && set["segment"] != "seg2") {
			t.Errorf("renewal %v, want seg1 or seg2 in bypass for %v", set, lease)
		}
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

// A box on a build from before the update mark refuses the field: the
// overrides are set unmarked instead, and stay so.
func TestBypassOnOldBox(t *testing.T) {
	box := &overrideBox{old: true}
	srv := httptest.NewServer(box)
	defer srv.Close()
	c := &Client{StatusURL: srv.URL + "/"}
	if done, _, _ := c.Bypass(context.Background(), "ncpos update to b", time.Minute); !slices.Equal(done, []string{"seg1", "seg2"}) {
		t.Fatalf("Bypass on an old box: %v, want seg1 and seg2 overridden", done)
	}
	// Renewals go unmarked at once.
	for _, seg := range []string{"seg1", "seg2"} {
		if err := c.override(context.Background(), seg, "ncpos update to b", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for _, set := range box.taken() {
		if _, ok := set["update"]; ok || set["state"] != "bypass" {
			t.Errorf("override %v on an old box, want bypass unmarked", set)
		}
	}
	if n := len(box.taken()); n != 4 {
		t.Errorf("%d overrides taken, want 4", n)
	}
}

// An update that finds the overrides of an earlier one in force (its
// client died) ends them and takes the segments' state once they forward
// again; an operator's own override it leaves to the update's usual
// course.
func TestLeftovers(t *testing.T) {
	box := &overrideBox{forwarding: true, overrides: map[string]*api.Override{
		"seg1": {State: "bypass", Reason: "ncpos update to a", Update: true},
		"seg2": {State: "bypass", Reason: "maintenance"},
	}}
	srv := httptest.NewServer(box)
	defer srv.Close()
	c := &Client{StatusURL: srv.URL + "/"}
	segs, err := c.Segments(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	left := Leftovers(segs)
	if !slices.Equal(left, []string{"seg1"}) {
		t.Fatalf("leftovers %v, want seg1 only", left)
	}
	if segs, err = c.endLeftovers(context.Background(), left, time.Minute, t.Logf); err != nil {
		t.Fatal(err)
	}
	b := verdict.BaselineOf(segs)
	if !b["seg1"].Forwarding || b["seg2"].Forwarding {
		t.Errorf("baseline after ending the leftovers: %v, want seg1 forwarding and seg2 still in its operator's bypass", b)
	}
	if sets := box.taken(); len(sets) != 1 || sets[0]["segment"] != "seg1" || sets[0]["state"] != "auto" {
		t.Errorf("overrides sent %v, want seg1's ended only", sets)
	}
	// A segment that does not forward once its override ends (a cable
	// out) is taken as it is after the patience.
	box.mu.Lock()
	box.forwarding = false
	box.overrides["seg1"] = &api.Override{State: "bypass", Reason: "ncpos update to a", Update: true}
	box.mu.Unlock()
	start := time.Now()
	if segs, err = c.endLeftovers(context.Background(), []string{"seg1"}, 2*time.Second, t.Logf); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 2*time.Second || verdict.BaselineOf(segs)["seg1"].Forwarding {
		t.Errorf("a segment that does not forward: waited %v, baseline %v", d, verdict.BaselineOf(segs))
	}
}

// A segment an operator holds by an override of their own (a maintenance
// window) is left as it is: the update neither replaces its override nor,
// at the end, ends it; one an earlier update left is the update's to set.
func TestBypassLeavesOperatorOverrides(t *testing.T) {
	box := &overrideBox{forwarding: true, overrides: map[string]*api.Override{
		"seg1": {State: "bypass", Reason: "ncpos update to a", Update: true},
		"seg2": {State: "disconnect", Reason: "switch replaced", By: "ncpos@192.0.2.9"},
	}}
	srv := httptest.NewServer(box)
	defer srv.Close()
	c := &Client{StatusURL: srv.URL + "/"}
	done, held, err := c.Bypass(context.Background(), "ncpos update to b", time.Minute)
	if !slices.Equal(done, []string{"seg1"}) || len(held) != 1 || held["seg2"].Reason != "switch replaced" || err == nil || err.Error() != "segment seg3 has no bypass relay" {
		t.Fatalf("Bypass: done %v, held %v, %v; want seg1 overridden, seg2 held by its operator, seg3 reported", done, held, err)
	}
	if err := c.EndBypass(context.Background(), done); err != nil {
		t.Fatal(err)
	}
	for _, set := range box.taken() {
		if set["segment"] != "seg1" {
			t.Errorf("the update sent %v, want nothing for seg2", set)
		}
	}
	if o := box.overrides["seg2"]; o == nil || o.State != "disconnect" {
		t.Errorf("seg2's override after the update: %+v, want its operator's", o)
	}
}
