package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/api"
)

// testMonitor is a monitor of a box with no daemons and no /proc: its
// steps are quick, and its clock is the test's.
func testMonitor(t *testing.T) (*Monitor, func() time.Time) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return t0 }
	return &Monitor{Collector: &Collector{Root: t.TempDir(), RunDir: t.TempDir()}, Events: events.NewLog(0), Now: clock}, clock
}

// TestLatestDuringSlowStep: on a box so busy that a step takes longer
// than the interval, a request still gets a snapshot at once. One that
// finds a step under way gets the snapshot there is, and a snapshot is
// fresh for an interval after its step ended, so that a request right
// after a long step does not take another.
func TestLatestDuringSlowStep(t *testing.T) {
	mon, clock := testMonitor(t)
	t0 := clock()
	var mu sync.Mutex
	long := true // the step's first reading of the clock is its start, later ones 5 s on
	mon.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if long {
			long = false
			return t0
		}
		return t0.Add(5 * time.Second)
	}
	first := mon.Step(context.Background())
	if !first.Time.Equal(t0) {
		t.Fatalf("snapshot of %v, want %v", first.Time, t0)
	}
	if got := mon.Latest(context.Background()); got != first {
		t.Errorf("right after a step of 5 s, Latest took another (snapshot of %v)", got.Time)
	}

	// 5 s later still, with a step under way: the kept snapshot, at once.
	mon.Now = func() time.Time { return t0.Add(10 * time.Second) }
	mon.stepMu.Lock()
	got := make(chan *api.Snapshot, 1)
	go func() { got <- mon.Latest(context.Background()) }()
	select {
	case s := <-got:
		if s != first {
			t.Errorf("Latest during a step: snapshot of %v, want the kept one of %v", s.Time, first.Time)
		}
	case <-time.After(5 * time.Second):
		t.Error("Latest waited for the step under way")
	}
	mon.stepMu.Unlock()
	if s := mon.Latest(context.Background()); s == first || !s.Time.Equal(t0.Add(10*time.Second)) {
		t.Errorf("with no step under way, a stale snapshot was not taken again (%v)", s.Time)
	}
}

// TestAfterWaitsForTheEventsStep: a notification made from After(t) sees
// the snapshot of the step that raised its event at t, not the one kept
// before that step, which Latest gives while the step runs.
func TestAfterWaitsForTheEventsStep(t *testing.T) {
	mon, clock := testMonitor(t)
	t0 := clock()
	first := mon.Step(context.Background())
	if got := mon.After(context.Background(), t0); got != first {
		t.Fatalf("After(the kept snapshot's time): snapshot of %v, want the kept one", got.Time)
	}

	// A step under way raises an event at t1.
	t1 := t0.Add(3 * time.Second)
	mon.Now = func() time.Time { return t1 }
	mon.stepMu.Lock()
	got := make(chan *api.Snapshot, 1)
	go func() { got <- mon.After(context.Background(), t1) }()
	if s := mon.Latest(context.Background()); s != first {
		t.Errorf("Latest during the step: snapshot of %v, want the kept one", s.Time)
	}
	select {
	case s := <-got:
		t.Fatalf("After returned the snapshot of %v before the event's step ended", s.Time)
	case <-time.After(200 * time.Millisecond):
	}
	second := mon.step(context.Background()).snap
	mon.stepMu.Unlock()
	select {
	case s := <-got:
		if s != second {
			t.Errorf("After: snapshot of %v, want that of the event's step", s.Time)
		}
	case <-time.After(5 * time.Second):
		t.Error("After did not return once the step ended")
	}
}
