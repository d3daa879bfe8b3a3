package watchdog

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"golang.org/x/sys/unix"
)

func TestGate(t *testing.T) {
	boot := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var forwarderErr atomic.Value
	forwarderErr.Store("")
	hang := make(chan struct{})
	var hanging atomic.Bool
	g := &Gate{
		Timeout: 50 * time.Millisecond,
		Boot:    boot,
		Grace:   60 * time.Second,
		Checks: []Check{
			{Name: "forwarderd /healthz", Run: func(ctx context.Context) error {
				if s := forwarderErr.Load().(string); s != "" {
					return errors.New(s)
				}
				return nil
			}},
			{Name: "bypassd /healthz", Run: func(ctx context.Context) error {
				if hanging.Load() {
					<-hang // ignores ctx, as a wedged daemon client might
				}
				return nil
			}},
		},
	}
	ctx := context.Background()
	at := func(s int) time.Time { return boot.Add(time.Duration(s) * time.Second) }

	// Grace period: a failing check does not stop petting.
	forwarderErr.Store("datapath stalled")
	if d := g.Evaluate(ctx, at(10)); !d.Pet || !d.InGrace || len(d.Failing) != 1 {
		t.Fatalf("in grace: %+v, want pet with one failing check", d)
	}
	// After grace: all pass -> pet.
	forwarderErr.Store("")
	if d := g.Evaluate(ctx, at(61)); !d.Pet || d.InGrace || len(d.Failing) != 0 {
		t.Fatalf("healthy: %+v", d)
	}
	// One check failing -> no pet, and the reason names it with its start.
	forwarderErr.Store("datapath stalled")
	d := g.Evaluate(ctx, at(70))
	if d.Pet || len(d.Failing) != 1 || d.Failing[0].Name != "forwarderd /healthz" {
		t.Fatalf("failing: %+v", d)
	}
	if r := d.Reason(); !strings.Contains(r, "forwarderd /healthz failing since 2026-11-30T12:01:10Z: datapath stalled") {
		t.Fatalf("reason = %q", r)
	}
	// Still failing later: Since stays at the first failure.
	d = g.Evaluate(ctx, at(75))
	if d.Pet || !d.Failing[0].Since.Equal(at(70)) {
		t.Fatalf("still failing: %+v", d)
	}
	// Recovery before the deadline: petting resumes.
	forwarderErr.Store("")
	if d := g.Evaluate(ctx, at(80)); !d.Pet {
		t.Fatalf("recovered: %+v", d)
	}
	// A check that hangs counts as failing, and is not started again while
	// its earlier run hangs.
	hanging.Store(true)
	d = g.Evaluate(ctx, at(90))
	if d.Pet || len(d.Failing) != 1 || !strings.Contains(d.Failing[0].Error, "no answer within") {
		t.Fatalf("hanging check: %+v", d)
	}
	d = g.Evaluate(ctx, at(95))
	if d.Pet || !strings.Contains(d.Failing[0].Error, "still hanging since") {
		t.Fatalf("hanging check, second round: %+v", d)
	}
	hanging.Store(false)
	close(hang)
	deadline := time.Now().Add(2 * time.Second)
	for {
		if d := g.Evaluate(ctx, at(100)); d.Pet {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("gate did not recover after the hung check returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := g.States(); len(st) != 2 || !st[0].OK || !st[1].OK {
		t.Fatalf("states = %+v", st)
	}
}

func TestLastReset(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	failing := Decision{Failing: []watchdogapi.CheckState{{Name: "forwarderd /healthz", Since: now.Add(-7 * time.Second), Error: "stalled"}}}
	for _, tc := range []struct {
		name       string
		setup      func(r Records)
		bootStatus uint32
		wantKind   string
		wantText   string
	}{
		{"power-on", func(Records) {}, 0, "power-on", "power-on"},
		{"watchdog with record", func(r Records) { r.WriteFailure(failing, now) }, unix.WDIOF_CARDRESET,
			"watchdog", "watchdog (forwarderd /healthz failing since 2026-11-30T11:59:53Z: stalled)"},
		{"watchdog without record", func(Records) {}, unix.WDIOF_CARDRESET,
			"watchdog", "watchdog (no record of a failing check (watchdogd not running?))"},
		{"planned reboot", func(r Records) { r.WritePlanned("reboot", now) }, 0,
			"planned reboot", "planned reboot (requested at 2026-11-30T12:00:00Z)"},
		{"watchdog beats planned", func(r Records) { r.WritePlanned("reboot", now); r.WriteFailure(failing, now) }, unix.WDIOF_CARDRESET,
			"watchdog", ""},
		{"failure while stopping is the planned stop", func(r Records) {
			r.WritePlanned("reboot", now.Add(-10*time.Second))
			r.WriteFailure(failing, now)
			r.WritePlanned("reboot", now) // watchdogd's SIGTERM: the first record stays
		}, 0, "planned reboot", "planned reboot (requested at 2026-11-30T11:59:50Z; while stopping: forwarderd /healthz failing since 2026-11-30T11:59:53Z: stalled)"},
		{"failure before the plan is the watchdog's", func(r Records) {
			r.WriteFailure(failing, now)
			r.WritePlanned("reboot", now)
		}, 0, "watchdog", "watchdog (forwarderd /healthz failing since 2026-11-30T11:59:53Z: stalled; the driver did not report the reset)"},
		{"a plan long before the failure did not cause it", func(r Records) {
			r.WritePlanned("reboot", now.Add(-time.Hour))
			r.WriteFailure(failing, now)
		}, 0, "watchdog", ""},
		{"a plan that did not happen is forgotten", func(r Records) {
			r.WritePlanned("reboot", now.Add(-10*time.Second))
			r.ClearPlanned()
			r.WriteFailure(failing, now)
		}, 0, "watchdog", ""},
		{"hung while stopping is the watchdog's", func(r Records) {
			r.WritePlanned("reboot", now.Add(-10*time.Second))
			r.WriteFailure(failing, now)
		}, unix.WDIOF_CARDRESET, "watchdog", ""},
		{"recovered failure is forgotten", func(r Records) { r.WriteFailure(failing, now); r.ClearFailure() }, 0,
			"power-on", "power-on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Records{Dir: t.TempDir()}
			tc.setup(r)
			lr, err := r.DecideLastReset(tc.bootStatus, "boot-1", now)
			if err != nil {
				t.Fatal(err)
			}
			if lr.Kind != tc.wantKind || tc.wantText != "" && lr.Text != tc.wantText {
				t.Fatalf("last reset = %q / %q, want %q / %q", lr.Kind, lr.Text, tc.wantKind, tc.wantText)
			}
			// The same boot asks again (watchdogd restarted): same answer,
			// although the records were consumed.
			again, err := r.DecideLastReset(0, "boot-1", now.Add(time.Minute))
			if err != nil || again.Text != lr.Text {
				t.Fatalf("second ask in the same boot = %q, want %q", again.Text, lr.Text)
			}
			// The next boot without new records is a power-on.
			next, _ := r.DecideLastReset(0, "boot-2", now.Add(time.Hour))
			if next.Kind != "power-on" {
				t.Fatalf("next boot = %q, want power-on", next.Kind)
			}
		})
	}
}
