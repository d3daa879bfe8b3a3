package bypass

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
)

// clock is a fake clock for driving a Decider.
type clock struct{ t time.Time }

func newClock() *clock                        { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (c *clock) now() time.Time               { return c.t }
func (c *clock) advance(d time.Duration)      { c.t = c.t.Add(d) }
func (c *clock) at(d time.Duration) time.Time { return c.t.Add(d) }

var (
	healthy   = Health{OK: true}
	unhealthy = Health{Reason: "heartbeat stale"}
)

// run feeds the same verdict every step for dur (ending exactly at now+dur)
// and returns the state at the end; it fails the test if the state changed
// before the end.
func run(t *testing.T, d *Decider, c *clock, h Health, dur, step time.Duration) bypassapi.State {
	t.Helper()
	end := c.at(dur)
	first, _, _ := d.Decide(c.now())
	for {
		d.Observe(c.now(), h)
		s, _, _ := d.Decide(c.now())
		if !c.now().Before(end) {
			return s
		}
		if s != first {
			t.Fatalf("state changed to %s %v before the end", s, end.Sub(c.now()))
		}
		c.advance(min(step, end.Sub(c.now())))
	}
}

func want(t *testing.T, d *Decider, c *clock, state bypassapi.State, causeHas string) {
	t.Helper()
	s, cause, _ := d.Decide(c.now())
	if s != state || !strings.Contains(cause, causeHas) {
		t.Fatalf("Decide = %s (%q), want %s with %q", s, cause, state, causeHas)
	}
}

func TestPolicyBoot(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     Policy
		start time.Duration // the start hold-down in force
	}{
		{"defaults", Policy{}, time.Second},
		{"set", Policy{StartHoldDown: 3 * time.Second}, 3 * time.Second},
		{"hold-down shorter than the default start", Policy{HoldDown: 400 * time.Millisecond}, 400 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			testPolicyBoot(t, c.p, c.start)
		})
	}
}

// testPolicyBoot: bypass at boot until the forwarder has been healthy
// for the start hold-down, then the full hold-down after a failure.
func testPolicyBoot(t *testing.T, p Policy, startHD time.Duration) {
	c := newClock()
	d := newDecider(p, c.now(), false)
	want(t, d, c, bypassapi.Bypass, "start: bypass until the forwarder is healthy")

	// Unhealthy at boot (forwarder still loading): stays in bypass.
	run(t, d, c, unhealthy, 3*time.Second, 50*time.Millisecond)
	want(t, d, c, bypassapi.Bypass, "start")
	if got := d.HoldDown(c.now()); got != startHD {
		t.Errorf("hold-down in force at start %v, want the start hold-down %v", got, startHD)
	}

	// Healthy: normal after exactly the start hold-down.
	d.Observe(c.now(), healthy)
	start := c.now()
	for d.state == bypassapi.Bypass || d.auto == bypassapi.Bypass {
		c.advance(50 * time.Millisecond)
		d.Observe(c.now(), healthy)
		d.Decide(c.now())
		if c.now().Sub(start) > 10*time.Second {
			t.Fatal("never went normal")
		}
	}
	if got := c.now().Sub(start); got != startHD {
		t.Errorf("went normal after %v of health, want exactly the start hold-down %v", got, startHD)
	}
	want(t, d, c, bypassapi.Normal, fmt.Sprintf("forwarder healthy for %v (start hold-down %v)", startHD, startHD))

	// A failure after that: back only after the full hold-down.
	full := d.p.HoldDown
	d.Observe(c.now(), unhealthy)
	want(t, d, c, bypassapi.Bypass, "forwarder unhealthy")
	if got := d.HoldDown(c.now()); got != full {
		t.Errorf("hold-down after the first failure %v, want %v", got, full)
	}
	if s := run(t, d, c, healthy, full-50*time.Millisecond, 50*time.Millisecond); s != bypassapi.Bypass {
		t.Fatalf("%s before the hold-down after a failure", s)
	}
	c.advance(50 * time.Millisecond)
	d.Observe(c.now(), healthy)
	want(t, d, c, bypassapi.Normal, fmt.Sprintf("(hold-down %v)", full))
}

func TestPolicyFailureAndRecovery(t *testing.T) {
	c := newClock()
	d := newDecider(Policy{HoldDown: 5 * time.Second}, c.now(), true)
	want(t, d, c, bypassapi.Normal, "relay already normal and forwarder healthy")

	// One bad verdict is enough: bypass at once, with the reason.
	c.advance(time.Second)
	d.Observe(c.now(), Health{Reason: "forwarderd /healthz: connection refused"})
	want(t, d, c, bypassapi.Bypass, "forwarder unhealthy: forwarderd /healthz: connection refused")

	// Health that is interrupted restarts the hold-down.
	run(t, d, c, healthy, 4*time.Second, 100*time.Millisecond)
	d.Observe(c.now(), unhealthy)
	want(t, d, c, bypassapi.Bypass, "connection refused") // still the cause of the transition
	if got := run(t, d, c, healthy, 4900*time.Millisecond, 100*time.Millisecond); got != bypassapi.Bypass {
		t.Fatalf("normal after %v of health following a break", 4900*time.Millisecond)
	}
	c.advance(100 * time.Millisecond)
	d.Observe(c.now(), healthy)
	want(t, d, c, bypassapi.Normal, "hold-down 5s")
}

func TestPolicyFlapDamping(t *testing.T) {
	c := newClock()
	d := newDecider(Policy{HoldDown: 5 * time.Second, FlapWindow: time.Minute, MaxHoldDown: 30 * time.Second}, c.now(), true)
	// Each failure within the window doubles the hold-down: 5s, 10s, 20s,
	// then the 30s cap.
	for i, wantHD := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second} {
		c.advance(time.Second)
		d.Observe(c.now(), unhealthy)
		want(t, d, c, bypassapi.Bypass, "unhealthy")
		if got := d.HoldDown(c.now()); got != wantHD {
			t.Fatalf("failure %d: hold-down %v, want %v", i+1, got, wantHD)
		}
		c.advance(time.Second)
		if wantHD <= 20*time.Second {
			// Back to normal after exactly the damped hold-down.
			d.Observe(c.now(), healthy)
			c.advance(wantHD - time.Millisecond)
			d.Observe(c.now(), healthy)
			want(t, d, c, bypassapi.Bypass, "unhealthy")
			c.advance(time.Millisecond)
			d.Observe(c.now(), healthy)
			want(t, d, c, bypassapi.Normal, "hold-down "+wantHD.String())
		}
	}
	// Quiet for longer than the window: failures age out, the hold-down
	// shrinks back while waiting.
	c.advance(2 * time.Minute)
	if got := d.HoldDown(c.now()); got != 5*time.Second {
		t.Errorf("hold-down after a quiet window = %v, want 5s", got)
	}
	d.Observe(c.now(), healthy)
	c.advance(5 * time.Second)
	d.Observe(c.now(), healthy)
	want(t, d, c, bypassapi.Normal, "hold-down 5s")
}

func TestPolicyOverride(t *testing.T) {
	c := newClock()
	d := newDecider(Policy{}, c.now(), true)
	// Manual bypass while healthy, for 10 minutes.
	d.SetOverride(bypassapi.Override{State: bypassapi.Bypass, Reason: "cabling work", Set: c.now(), Expires: c.at(10 * time.Minute)})
	want(t, d, c, bypassapi.Bypass, "manual override: cabling work (until 2026-01-02T03:14:05Z)")
	run(t, d, c, healthy, 10*time.Minute-time.Millisecond, time.Second)
	want(t, d, c, bypassapi.Bypass, "manual override")
	c.advance(time.Second)
	d.Observe(c.now(), healthy)
	s, cause, expired := d.Decide(c.now())
	if s != bypassapi.Normal || expired == nil || expired.Reason != "cabling work" || !strings.Contains(cause, `override "cabling work" expired`) {
		t.Fatalf("after expiry: %s %q %+v", s, cause, expired)
	}
	if d.Override() != nil {
		t.Error("expired override still active")
	}

	// Manual normal while the forwarder is down (an operator who knows
	// better), cleared by hand: back to bypass at once.
	d.Observe(c.now(), unhealthy)
	want(t, d, c, bypassapi.Bypass, "unhealthy")
	d.SetOverride(bypassapi.Override{State: bypassapi.Normal, Reason: "testing the NICs", Set: c.now()})
	want(t, d, c, bypassapi.Normal, "manual override: testing the NICs")
	c.advance(time.Hour)
	want(t, d, c, bypassapi.Normal, "manual override") // no expiry
	d.ClearOverride()
	want(t, d, c, bypassapi.Bypass, "forwarder unhealthy")

	// Disconnect by override.
	d.SetOverride(bypassapi.Override{State: bypassapi.Disconnect, Reason: "force failover to the backup link", Set: c.now()})
	want(t, d, c, bypassapi.Disconnect, "force failover")
}

func TestPolicyPlannedShutdown(t *testing.T) {
	c := newClock()
	d := newDecider(Policy{}, c.now(), true)
	d.SetOverride(bypassapi.Override{State: bypassapi.Normal, Reason: "keep", Set: c.now()})
	d.Plan(bypassapi.Planned{Kind: "update", Reason: "ota to v2", Since: c.now()})
	// A planned shutdown beats an override and health.
	d.Observe(c.now(), healthy)
	want(t, d, c, bypassapi.Bypass, "planned update: ota to v2")
	d.Unplan()
	want(t, d, c, bypassapi.Normal, "manual override: keep")
}

func TestPolicyFailsafe(t *testing.T) {
	c := newClock()
	d := newDecider(Policy{}, c.now(), true)
	d.Failsafe("profile refused")
	d.SetOverride(bypassapi.Override{State: bypassapi.Normal, Reason: "x", Set: c.now()})
	run(t, d, c, healthy, time.Minute, time.Second)
	want(t, d, c, bypassapi.Bypass, "failsafe: profile refused")
}
