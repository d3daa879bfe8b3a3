package watchdog

import (
	"context"
	"errors"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"strings"
	"testing"
	"time"
)

// fakeDog is a watchdog that fires when not pinged within timeout on the
// fake clock.
type fakeDog struct {
	now      *time.Time
	timeout  time.Duration
	lastPing time.Time
	fired    bool
}

func (f *fakeDog) Ping() error {
	if f.fired {
		return errors.New("already fired")
	}
	f.lastPing = *f.now
	return nil
}

func (f *fakeDog) TimeLeft() (time.Duration, error) { return f.timeout - f.now.Sub(f.lastPing), nil }

func (f *fakeDog) advance(d time.Duration) {
	*f.now = f.now.Add(d)
	if f.now.Sub(f.lastPing) >= f.timeout {
		f.fired = true
	}
}

func TestSupervisor(t *testing.T) {
	boot := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := boot
	dog := &fakeDog{now: &now, timeout: 30 * time.Second, lastPing: boot}
	var failing error
	gate := &Gate{Timeout: 100 * time.Millisecond, Boot: boot, Grace: 20 * time.Second,
		Checks: []Check{{Name: "forwarderd /healthz", Run: func(context.Context) error { return failing }}}}
	rec := Records{Dir: t.TempDir()}
	s := NewSupervisor(dog, gate, rec, 5*time.Second, watchdogapi.Status{TimeoutSec: 30})
	s.Now = func() time.Time { return now }
	ctx := context.Background()
	run := func(d time.Duration) {
		for end := now.Add(d); now.Before(end) && !dog.fired; {
			s.Step(ctx)
			dog.advance(5 * time.Second)
		}
	}

	// Failing during the grace period: still petted, nothing recorded.
	failing = errors.New("not up yet")
	run(20 * time.Second)
	if dog.fired || !s.Status().Petting {
		t.Fatal("reset during the boot grace period")
	}
	// Healthy for a long time: never fires.
	failing = nil
	run(5 * time.Minute)
	if dog.fired {
		t.Fatal("healthy appliance was reset")
	}
	// Fails briefly, recovers before the deadline: no reset, record gone.
	failing = errors.New("datapath stalled")
	run(10 * time.Second)
	if st := s.Status(); st.Petting || !strings.Contains(st.StoppedReason, "datapath stalled") {
		t.Fatalf("status while failing = %+v", st)
	}
	if _, err := rec.read("failure.json", &FailureRecord{}); err != nil {
		t.Fatal(err)
	}
	failing = nil
	run(10 * time.Second)
	if dog.fired || !s.Status().Petting {
		t.Fatal("recovery before the deadline did not resume petting")
	}
	if ok, _ := rec.read("failure.json", &FailureRecord{}); ok {
		t.Fatal("failure record kept after recovery")
	}
	// Fails for good: the dog fires within timeout + interval, and the
	// record names the check.
	failing = errors.New("datapath stalled")
	start := now
	run(time.Minute)
	if !dog.fired {
		t.Fatal("failing appliance was not reset")
	}
	if took := now.Sub(start); took > 35*time.Second {
		t.Fatalf("reset took %v, want within timeout + interval", took)
	}
	var fr FailureRecord
	if ok, err := rec.read("failure.json", &fr); !ok || err != nil || !strings.Contains(fr.Reason, "forwarderd /healthz") {
		t.Fatalf("failure record = %+v, %v, %v", fr, ok, err)
	}
}
