package change

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc/health"
)

// busy makes forwarderd refuse to take the configuration before (base)
// until it is told otherwise, as a segment it cannot re-attach does
// ("device busy").
type busy struct {
	mu  sync.Mutex
	on  bool
	err error
}

func (f *busy) set(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = on
}

func (f *busy) failIf(taker, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on && taker == config.TakerForwarder && text == base {
		return f.err
	}
	return nil
}

// reboots counts the reboots a manager asks for.
type reboots struct {
	mu      sync.Mutex
	reasons []string
}

func (r *reboots) reboot(_ context.Context, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
	return nil
}

func (r *reboots) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reasons)
}

func owedBox(t *testing.T) (*box, *busy, *reboots) {
	t.Helper()
	b := newBox(t)
	f := &busy{err: errors.New("segment seg1 not attached: device busy")}
	b.failIf = f.failIf
	r := &reboots{}
	b.m.Reboot = r.reboot
	b.m.SettledFile = filepath.Join(t.TempDir(), "settled.toml")
	b.m.TrialConfig = filepath.Join(t.TempDir(), "trial.toml")
	return b, f, r
}

// waitState waits for version n to be in state.
func waitState(t *testing.T, b *box, n int, state versions.State) versions.Version {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		v, _, err := b.m.Store.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if v.State == state {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("version %d is %s (%s), want %s", n, v.State, v.Reason, state)
		}
	}
}

func hasCriticalEvent(l *events.Log, word string) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, e := range l.Recent(50) {
			if e.Kind == events.KindConfig && e.Severity == events.Critical && strings.Contains(e.Message, word) {
				return true
			}
		}
	}
	return false
}

// TestRevertOwed: a revert a daemon fails to take is not given up. The
// version is reverting, not reverted, a critical event says what failed,
// the manager shows a condition and refuses another change, and the
// revert is tried every tick until it is taken; then the version is
// reverted and the box runs the version before, with no reboot.
func TestRevertOwed(t *testing.T) {
	b, f, r := owedBox(t)
	b.m.RevertAttempts, b.m.RevertWithin = 1000, time.Hour
	res, err := b.apply(t, withSeg2, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.m.Run(ctx)
	f.set(true)
	v, err := b.m.Revert(ctx, res.Version.Number, "reverted by ncpos")
	if err == nil || !strings.Contains(err.Error(), "device busy") || v.State != versions.Reverting || !strings.Contains(v.Reason, "device busy") {
		t.Fatalf("a revert forwarderd does not take: %+v, %v; want reverting, saying why", v, err)
	}
	if !hasCriticalEvent(b.evlog, "device busy") {
		t.Error("no critical event says the revert failed")
	}
	if c := b.m.Conditions(); len(c) != 1 || c[0].Kind != health.ConfigRevertOwed || !strings.Contains(c[0].Detail, "device busy") {
		t.Errorf("conditions while the revert is owed: %+v", c)
	}
	if settled, _ := b.m.Settled(); string(settled) != base {
		t.Errorf("settled while the revert is owed: %q, want the version before", settled)
	}
	if _, err := b.apply(t, base+"# another\n", 1, time.Minute); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "going back from version 2") {
		t.Errorf("a change while a revert is owed: %v, want ErrBusy", err)
	}
	// Tried every tick.
	n := len(b.calls(config.TakerForwarder))
	time.Sleep(10 * b.m.Tick)
	if got := len(b.calls(config.TakerForwarder)); got < n+3 {
		t.Errorf("forwarderd asked %d times in 10 ticks of an owed revert, want it asked again every tick", got-n)
	}
	f.set(false)
	v = waitState(t, b, res.Version.Number, versions.Reverted)
	if !strings.Contains(v.Reason, "going back failed") || b.file(t, b.m.RunConfig) != base || b.file(t, b.m.SettledFile) != "" {
		t.Errorf("taken at last: %+v, in force %q", v, b.file(t, b.m.RunConfig))
	}
	if c := b.m.Conditions(); len(c) != 0 || r.count() != 0 {
		t.Errorf("after the revert was taken: conditions %+v, %d reboots", c, r.count())
	}
	if _, err := b.apply(t, withSeg2, 1, time.Minute); err != nil {
		t.Errorf("a change after the owed revert was taken: %v", err)
	}
}

// TestRevertOwedReboots: a revert that keeps failing ends in a reboot
// onto the version the box boots on, after RevertAttempts attempts; the
// reboot is asked once, and no trial configuration is left to boot on.
func TestRevertOwedReboots(t *testing.T) {
	b, f, r := owedBox(t)
	b.m.RevertAttempts = 3
	f.set(true)
	res, err := b.apply(t, withSeg2, 0, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(b.m.TrialConfig, []byte(withSeg2), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.m.Run(ctx)
	waitState(t, b, res.Version.Number, versions.Reverting)
	v := waitState(t, b, res.Version.Number, versions.Reverted)
	if !strings.Contains(v.Reason, "deadline") || !strings.Contains(v.Reason, "reboots onto the version it boots on") {
		t.Errorf("reverted by a reboot: %q", v.Reason)
	}
	if !hasCriticalEvent(b.evlog, "failed 3 times") {
		t.Error("no critical event says the box reboots after 3 failed attempts")
	}
	time.Sleep(10 * b.m.Tick)
	if r.count() != 1 || b.file(t, b.m.TrialConfig) != "" || b.file(t, b.m.PermConfig) != "" {
		t.Errorf("%d reboots (%q), trial %q, boots on %q; want one, onto the version before", r.count(), r.reasons, b.file(t, b.m.TrialConfig), b.file(t, b.m.PermConfig))
	}
	if got := len(b.calls(config.TakerForwarder)); got != 1+3 {
		t.Errorf("forwarderd asked %d times, want the change and 3 attempts to go back", got)
	}
}

// TestNotTakenGoingBackFails: a change a taker refuses, whose going back
// another refuses too, is owed, not reported as reverted.
func TestNotTakenGoingBackFails(t *testing.T) {
	b, f, _ := owedBox(t)
	b.failIf = func(taker, text string) error {
		if taker == config.TakerBypass && text == withSeg2 {
			return errors.New("no pair for seg2")
		}
		return f.failIf(taker, text)
	}
	f.set(true)
	res, err := b.apply(t, withSeg2, 0, time.Minute)
	if !errors.Is(err, ErrNotTaken) || !strings.Contains(err.Error(), "no pair for seg2") || !strings.Contains(err.Error(), "device busy") {
		t.Fatalf("not taken, and not taken back: %v", err)
	}
	if res.Version.State != versions.Reverting || len(b.m.Conditions()) != 1 {
		t.Errorf("not taken back: %+v, conditions %+v; want reverting and owed", res.Version, b.m.Conditions())
	}
	if _, ok := b.m.Pending(); ok {
		t.Error("a change not taken is pending")
	}
}

// TestResumeOwed: statusd started again while a revert was owed tries it
// again in the same boot; after a reboot (no settled file) the box runs
// the version before and the version is reverted.
func TestResumeOwed(t *testing.T) {
	b, f, _ := owedBox(t)
	b.m.RevertAttempts, b.m.RevertWithin = 1000, time.Hour
	res, err := b.apply(t, withSeg2, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.set(true)
	b.m.Revert(context.Background(), res.Version.Number, "reverted by ncpos")
	again := &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, SettledFile: b.m.SettledFile, PermConfig: b.m.PermConfig,
		Takers: b.m.Takers, Events: b.evlog, Tick: 20 * time.Millisecond, RevertAttempts: 1000, RevertWithin: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go again.Run(ctx)
	b.m = again
	for deadline := time.Now().Add(5 * time.Second); len(again.Conditions()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the owed revert was not picked up again")
		}
	}
	f.set(false)
	if v := waitState(t, b, res.Version.Number, versions.Reverted); b.file(t, again.RunConfig) != base {
		t.Errorf("after statusd started again: %+v", v)
	}

	b, f, _ = owedBox(t)
	res, _ = b.apply(t, withSeg2, 0, time.Hour)
	f.set(true)
	b.m.Revert(context.Background(), res.Version.Number, "reverted by ncpos")
	os.Remove(b.m.SettledFile) // the box rebooted onto the version before
	os.WriteFile(b.m.RunConfig, []byte(base), 0o644)
	again = &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, SettledFile: b.m.SettledFile, Takers: b.m.Takers, Tick: 20 * time.Millisecond}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go again.Run(ctx2)
	b.m = again
	if v := waitState(t, b, res.Version.Number, versions.Reverted); !strings.Contains(v.Reason, "booted on the version before") {
		t.Errorf("after the box rebooted: %+v", v)
	}
}

// TestResumeUnwatched: a change in force whose record does not read as
// statusd starts is not left unwatched: the box goes back to the
// configuration it replaced.
func TestResumeUnwatched(t *testing.T) {
	b, _, _ := owedBox(t)
	res, err := b.apply(t, withSeg2, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(filepath.Dir(b.m.RunConfig), "versions", "00000002.json")
	if err := os.WriteFile(record, []byte("{damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	again := &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, SettledFile: b.m.SettledFile, PermConfig: b.m.PermConfig,
		Takers: b.m.Takers, Events: b.evlog, Tick: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go again.Run(ctx)
	// Gone back once every taker took the version before and the
	// settled file is gone.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := b.calls(config.TakerBypass)
		if b.file(t, again.RunConfig) == base && got[len(got)-1] == base && b.file(t, b.m.SettledFile) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("version %d, whose record does not read, runs unwatched", res.Version.Number)
		}
	}
	if got := b.calls(config.TakerForwarder); got[len(got)-1] != base {
		t.Errorf("forwarderd last took %q, want the version before", got[len(got)-1])
	}
	if !hasEvent(b.evlog, "unconfirmed change") {
		t.Error("no event says why the box went back")
	}
}

// TestDeadlineMonotonic: the deadline is kept on the monotonic clock: a
// step of the wall clock, which moves the record's deadline as people
// read it, does not delay the revert.
func TestDeadlineMonotonic(t *testing.T) {
	b, _, _ := owedBox(t)
	res, err := b.apply(t, withSeg2, 0, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// As the wall clock stepped an hour back: the deadline reads an
	// hour further away.
	b.m.mu.Lock()
	b.m.pending.version.Deadline = b.m.pending.version.Deadline.Add(time.Hour)
	b.m.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go b.m.Run(ctx)
	v := waitState(t, b, res.Version.Number, versions.Reverted)
	if took := time.Since(start); took > 2*time.Second || !strings.Contains(v.Reason, "deadline") {
		t.Errorf("reverted after %v: %+v", took, v)
	}
}

// TestResumeBoundsDeadline: a pending version picked up again reverts
// within the window it was applied with, however far away the wall
// clock puts its recorded deadline, and the record says so.
func TestResumeBoundsDeadline(t *testing.T) {
	b, _, _ := owedBox(t)
	res, err := b.apply(t, withSeg2, 0, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The record as a clock a month ahead would have made it, set
	// right since.
	record := filepath.Join(filepath.Dir(b.m.RunConfig), "versions", "00000002.json")
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var v versions.Version
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	v.Time, v.Deadline = v.Time.Add(30*24*time.Hour), v.Deadline.Add(30*24*time.Hour)
	if data, err = json.Marshal(v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, data, 0o600); err != nil {
		t.Fatal(err)
	}
	again := &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, SettledFile: b.m.SettledFile, PermConfig: b.m.PermConfig,
		Takers: b.m.Takers, Events: b.evlog, Tick: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go again.Run(ctx)
	b.m = again
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p, ok := again.Pending(); ok && time.Until(p.Deadline) < time.Second {
			break
		}
		if time.Now().After(deadline) {
			p, _ := again.Pending()
			t.Fatalf("the resumed deadline reads %v away", time.Until(p.Deadline))
		}
	}
	v = waitState(t, b, res.Version.Number, versions.Reverted)
	if took := time.Since(start); took > 2*time.Second || !hasEvent(b.evlog, "further away than the window") {
		t.Errorf("a deadline a month away, resumed: reverted after %v (%+v)", took, v)
	}
}

// TestClockStepped: after a step of the wall clock the pending record's
// deadline is the same moment on the new clock, and the change still goes
// back when it was due.
func TestClockStepped(t *testing.T) {
	b, _, _ := owedBox(t)
	res, err := b.apply(t, withSeg2, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// As a record written before the clock stepped 20 years forward.
	old := time.Now().Add(-20 * 365 * 24 * time.Hour).Add(time.Minute)
	if _, err := b.m.Store.Redeadline(res.Version.Number, old); err != nil {
		t.Fatal(err)
	}
	b.m.ClockStepped()
	v, _, err := b.m.Store.Get(res.Version.Number)
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(v.Deadline); v.State != versions.Pending || left < 55*time.Second || left > time.Minute {
		t.Errorf("after the step the record says %s, deadline in %v; want pending, due in about a minute", v.State, left)
	}
}
