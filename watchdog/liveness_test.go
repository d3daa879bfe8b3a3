package watchdog

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
)

// TestGateOnEveryKind serves a daemon that reports, in turn, every known
// kind, and wants the gate to stop the pets for liveness kinds only: a
// condition of the network or the box, however bad, never resets the box.
func TestGateOnEveryKind(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var report health.Report
	go ipc.Serve(ctx, dir, "forwarderd", ipc.Handler(func() health.Report {
		mu.Lock()
		defer mu.Unlock()
		return report
	}, func() any { return nil }, nil))
	set := func(r health.Report) {
		mu.Lock()
		report = r
		mu.Unlock()
	}
	set(health.Report{Live: health.Live(time.Now())})
	c := ipc.NewClient(dir, "forwarderd", time.Second)
	for deadline := time.Now().Add(5 * time.Second); c.Live(ctx) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("fake forwarderd did not come up")
		}
	}

	boot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &Gate{Checks: []Check{LiveCheck(dir, "forwarderd", time.Second)}, Timeout: time.Second, Boot: boot, Grace: time.Minute}
	now := boot.Add(2 * time.Minute) // past grace
	for _, k := range health.Kinds() {
		class, _ := k.Class()
		r := health.Report{Daemon: "forwarderd", Live: health.Live(now)}
		if class == health.ClassLiveness {
			r.Live = health.Live(now, health.Problem{Kind: k, Detail: "made up"})
		} else {
			r.Conditions = []health.Condition{{Kind: k, Segment: "seg1", Port: "LAN2", Detail: "made up"}}
		}
		set(r)
		now = now.Add(5 * time.Second)
		d := g.Evaluate(ctx, now)
		if want := class != health.ClassLiveness; d.Pet != want {
			t.Errorf("%s (%s): pet %v, want %v (%s)", k, class, d.Pet, want, d.Reason())
		}
	}
	// During the grace period every check may fail.
	g.Boot = now
	set(health.Report{Live: health.Live(now, health.Problem{Kind: health.HeartbeatStale})})
	if d := g.Evaluate(ctx, now.Add(time.Second)); !d.Pet || !d.InGrace {
		t.Errorf("in grace: %+v", d)
	}
	// A daemon that does not answer is not live.
	cancel()
	time.Sleep(50 * time.Millisecond)
	if d := g.Evaluate(context.Background(), now.Add(2*time.Minute)); d.Pet {
		t.Error("pets with forwarderd gone")
	}
}
