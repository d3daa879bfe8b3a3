package update

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/verdict"
)

func fwd(name string, healthy bool, kinds ...health.Kind) api.Segment {
	f := &api.SegmentForwarding{Healthy: healthy}
	for _, k := range kinds {
		f.Conditions = append(f.Conditions, health.Condition{Kind: k, Segment: name})
	}
	return api.Segment{Name: name, Forwarding: f}
}

// A just-booted box's segments that do not forward yet are waited for,
// but not one an operator holds in bypass, and not on a box up longer
// than the settle time.
func TestSettling(t *testing.T) {
	held := fwd("held", false, health.RelayBypass)
	held.Bypass = &api.BypassState{Segment: "held", State: "bypass", Override: &api.Override{State: "bypass", Reason: "maintenance"}}
	segs := []api.Segment{
		fwd("up", true),
		fwd("down", false, health.LinkDown),
		{Name: "unreported"},
		held,
	}
	for _, tt := range []struct {
		uptime, settle time.Duration
		want           []string
		left           time.Duration
	}{
		{10 * time.Second, 2 * time.Minute, []string{"down", "unreported"}, 110 * time.Second},
		{2 * time.Minute, 2 * time.Minute, nil, 0},
		{time.Hour, 2 * time.Minute, nil, 0},
		{10 * time.Second, -1, nil, 0},
	} {
		got, left := settling(segs, tt.uptime, tt.settle)
		if !slices.Equal(got, tt.want) || left != tt.left {
			t.Errorf("settling(up %v, settle %v) = %v, %v; want %v, %v", tt.uptime, tt.settle, got, left, tt.want, tt.left)
		}
	}
	if got, _ := settling(segs[:1], 0, time.Minute); got != nil {
		t.Errorf("settling with every segment forwarding: %v, want none", got)
	}
}

// settleBox is a statusd whose segment seg1 forwards from a given
// request on (0: never), as a link does once it has come up.
type settleBox struct {
	from     int64
	requests atomic.Int64
}

func (b *settleBox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/segments" {
		http.NotFound(w, r)
		return
	}
	n := b.requests.Add(1)
	up := b.from > 0 && n >= b.from
	s := fwd("seg1", up)
	if !up {
		s = fwd("seg1", false, health.LinkDown)
	}
	json.NewEncoder(w).Encode(map[string]any{"segments": []api.Segment{s, fwd("seg2", true)}})
}

func TestSettledSegments(t *testing.T) {
	ctx := context.Background()
	down := []api.Segment{fwd("seg1", false, health.LinkDown), fwd("seg2", true)}
	for _, tt := range []struct {
		name       string
		from       int64
		bootedAgo  time.Duration
		settle     time.Duration
		forwarding bool
		requests   int64
		took       time.Duration // on the clock, which moves only when waited on
	}{
		// seg1's link comes up at the third look, a second apart: the
		// baseline is taken then.
		{"comes up", 3, 10 * time.Second, time.Minute, true, 3, 3 * time.Second},
		// seg1 never comes up: taken as it is once the box has been up for
		// the settle time.
		{"cable out", 0, 58*time.Second + 500*time.Millisecond, time.Minute, false, 2, 2 * time.Second},
		// a box up for longer is not waited for.
		{"long up", 0, time.Hour, time.Minute, false, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			box := &settleBox{from: tt.from}
			srv := httptest.NewServer(box)
			defer srv.Close()
			clk := &fakeClock{now: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
			c := &Client{StatusURL: srv.URL + "/", clk: clk}
			start := clk.Now()
			segs, err := c.settledSegments(ctx, down, start.Add(-tt.bootedAgo), tt.settle, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			took := clk.Now().Sub(start)
			b := verdict.BaselineOf(segs)
			if b["seg1"].Forwarding != tt.forwarding || !b["seg2"].Forwarding {
				t.Errorf("baseline %v, want seg1 forwarding %v and seg2 forwarding", b, tt.forwarding)
			}
			if n := box.requests.Load(); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if took != tt.took {
				t.Errorf("waited %v, want %v", took, tt.took)
			}
		})
	}
	// A box that stops answering ends the wait with an error that says so.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c := &Client{StatusURL: srv.URL + "/", clk: &fakeClock{now: time.Now()}}
	if _, err := c.settledSegments(ctx, down, time.Now(), time.Minute, t.Logf); err == nil {
		t.Error("settledSegments on a box that does not answer: no error")
	}
}
