package watchdog

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

// countingDog counts pings and takes timeouts in whole seconds, as
// drivers do.
type countingDog struct {
	mu      sync.Mutex
	pings   []time.Time
	timeout time.Duration
}

func (d *countingDog) Ping() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pings = append(d.pings, time.Now())
	return nil
}

func (d *countingDog) TimeLeft() (time.Duration, error) { return 0, nil }

func (d *countingDog) SetTimeout(t time.Duration) (time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timeout = t.Round(time.Second)
	return d.timeout, nil
}

func (d *countingDog) since(t time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, p := range d.pings {
		if p.After(t) {
			n++
		}
	}
	return n
}

// TestRetime: a running supervisor takes a new interval, timeout and
// grace between steps, and pets at the new pace.
func TestRetime(t *testing.T) {
	dog := &countingDog{timeout: 30 * time.Second}
	gate := &Gate{Timeout: 200 * time.Millisecond, Boot: time.Now(), Grace: time.Hour}
	s := NewSupervisor(dog, gate, Records{Dir: t.TempDir()}, 200*time.Millisecond, watchdogapi.Status{TimeoutSec: 30})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	if _, err := s.Retime(ctx, Times{Timeout: 10 * time.Second, Interval: 6 * time.Second}); err == nil {
		t.Error("an interval above half the timeout was taken")
	}
	res, err := s.Retime(ctx, Times{Timeout: 9400 * time.Millisecond, Interval: 20 * time.Millisecond, Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.TimeoutSec != 9 || res.IntervalSec != 0.02 || res.GraceSec != 60 {
		t.Errorf("retimed %+v, want 9 s (as the hardware took it), 0.02 s, 60 s", res)
	}
	start := time.Now()
	time.Sleep(500 * time.Millisecond)
	// At 20 ms about 25 pets; at the old 200 ms, 2 or 3.
	if n := dog.since(start); n < 10 {
		t.Errorf("%d pets in 500ms after the interval became 20ms", n)
	}
	st := s.Status()
	if st.TimeoutSec != 9 || st.IntervalSec != 0.02 || gate.Grace != time.Minute {
		t.Errorf("status timeout %d, interval %v, grace %v", st.TimeoutSec, st.IntervalSec, gate.Grace)
	}
}
