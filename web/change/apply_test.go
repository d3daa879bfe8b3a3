package change

import (
	"context"
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
	"github.com/ncpos/ncpos/web/api"
)

const base = `platform = "generic"
services = ["forwarderd", "bypassd"]
[[segment]]
name = "seg1"
ports = ["LAN1", "LAN2"]
`

const withSeg2 = base + `[[segment]]
name = "seg2"
ports = ["LAN3", "LAN4"]
`

// box is a manager over files in a temporary folder, with takers that
// count and a health the test sets.
type box struct {
	m *Manager
	// taken counts each taker's calls and what the file said then.
	mu    sync.Mutex
	taken map[string][]string
	fail  map[string]error
	// failIf fails a taker by what the file in force says (nil: fail).
	failIf  func(taker, text string) error
	healthy map[string]bool // segment -> forwarding
	down    bool            // forwarderd not live
	evlog   *events.Log
}

func newBox(t *testing.T) *box {
	t.Helper()
	dir := t.TempDir()
	store, err := versions.Open(filepath.Join(dir, "versions"), versions.DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	b := &box{taken: map[string][]string{}, fail: map[string]error{}, healthy: map[string]bool{"seg1": true}, evlog: events.NewLog(0)}
	b.m = &Manager{Store: store, RunConfig: filepath.Join(dir, "run.toml"), PermConfig: filepath.Join(dir, "perm.toml"),
		LastGood: filepath.Join(dir, "last-good.toml"), Source: "/etc/ncpos/ncpos.toml", Takers: map[string]Taker{},
		Events: b.evlog, Grace: 200 * time.Millisecond, Tick: 20 * time.Millisecond}
	for _, name := range []string{config.TakerForwarder, config.TakerBypass} {
		b.m.Takers[name] = TakerFunc(func(context.Context) error {
			text, _ := os.ReadFile(filepath.Join(dir, "run.toml"))
			b.mu.Lock()
			defer b.mu.Unlock()
			b.taken[name] = append(b.taken[name], string(text))
			if b.failIf != nil {
				if err := b.failIf(name, string(text)); err != nil {
					return err
				}
			}
			return b.fail[name]
		})
	}
	m := b.m
	b.m.Health = func(context.Context) ([]api.Segment, []api.Daemon, error) {
		// As statusd's monitor does: a step may keep the last good
		// configuration, which asks the manager.
		if _, err := m.Settled(); err != nil {
			return nil, nil, err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		var segs []api.Segment
		for name, ok := range b.healthy {
			segs = append(segs, api.Segment{Name: name, Forwarding: &api.SegmentForwarding{Healthy: ok}})
		}
		return segs, []api.Daemon{{Name: "forwarderd", Configured: true, Healthy: !b.down, Reason: "starting"}}, nil
	}
	if err := os.WriteFile(b.m.RunConfig, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *box) apply(t *testing.T, text string, replaces int, within time.Duration) (Applied, error) {
	t.Helper()
	next, err := config.Parse("candidate", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return b.m.Apply(context.Background(), Request{Text: []byte(text), Next: next, Replaces: replaces, ConfirmWithin: within, By: "ncpos", From: "192.0.2.1", Comment: "test"})
}

func (b *box) file(t *testing.T, path string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

func (b *box) calls(name string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.taken[name]...)
}

func TestApplyConfirm(t *testing.T) {
	b := newBox(t)
	res, err := b.apply(t, withSeg2, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version.Number != 2 || res.Version.Parent != 1 || res.Version.State != versions.Pending || res.Version.Deadline.IsZero() {
		t.Errorf("applied %+v, want version 2, pending, replacing the boot's version 1", res.Version)
	}
	if len(res.Changes) != 1 || res.Changes[0].Setting != "segment[seg2]" {
		t.Errorf("changes %+v, want seg2 added", res.Changes)
	}
	if got := b.calls(config.TakerForwarder); len(got) != 1 || got[0] != withSeg2 {
		t.Errorf("forwarderd took %q, want the new version once", got)
	}
	if got := b.calls(config.TakerBypass); len(got) != 1 || got[0] != withSeg2 {
		t.Errorf("bypassd took %q, want the new segment once (it follows which pair is whose)", got)
	}
	if b.file(t, b.m.RunConfig) != withSeg2 || b.file(t, b.m.PermConfig) != "" {
		t.Error("while pending: the file in force must be the new version, the one the box boots on untouched")
	}
	if _, n, _ := b.m.InForce(); n != 2 {
		t.Errorf("version in force %d, want 2", n)
	}
	boot, _, err := b.m.Store.Get(1)
	if err != nil || boot.State != versions.Confirmed || boot.Source != "/etc/ncpos/ncpos.toml" {
		t.Errorf("version 1 %+v (%v), want the boot's configuration, confirmed", boot, err)
	}
	// One change at a time, and against the version in force.
	if _, err := b.apply(t, base, 2, time.Minute); !errors.Is(err, ErrBusy) {
		t.Errorf("a second change while one is pending: %v, want ErrBusy", err)
	}
	if _, err := b.m.Confirm(1, "ncpos"); !errors.Is(err, ErrNotPending) {
		t.Errorf("confirming a version that is not pending: %v", err)
	}
	v, err := b.m.Confirm(2, "ncpos")
	if err != nil || v.State != versions.Confirmed {
		t.Fatalf("confirm: %+v, %v", v, err)
	}
	if b.file(t, b.m.PermConfig) != withSeg2 || b.file(t, b.m.LastGood) != withSeg2 {
		t.Error("a confirmed version must be the one the box boots on and its last good one")
	}
	if _, err := b.apply(t, base, 1, time.Minute); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "version 2 is in force") {
		t.Errorf("a change replacing version 1 while 2 is in force: %v, want ErrStale naming 2", err)
	}
	if _, err := b.apply(t, withSeg2, 2, time.Minute); !errors.Is(err, ErrUnchanged) {
		t.Errorf("the configuration in force again: %v, want ErrUnchanged", err)
	}
	// Without a deadline a change is confirmed at once; a change of
	// bypassd's alone is taken by bypassd alone.
	holdDown := withSeg2 + "[bypass]\nhold_down = \"9s\"\n"
	res, err = b.apply(t, holdDown, 2, 0)
	if err != nil || res.Version.State != versions.Confirmed || b.file(t, b.m.PermConfig) != holdDown {
		t.Errorf("applied without a deadline: %+v, %v", res.Version, err)
	}
	if f, by := b.calls(config.TakerForwarder), b.calls(config.TakerBypass); len(f) != 1 || len(by) != 2 || by[1] != holdDown {
		t.Errorf("a hold-down change: forwarderd took %d, bypassd %d changes; want 1 and 2", len(f), len(by))
	}
}

func TestRevertOnDeadline(t *testing.T) {
	b := newBox(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.m.Run(ctx)
	res, err := b.apply(t, withSeg2, 0, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	v := waitSettled(t, b, res.Version.Number)
	if v.State != versions.Reverted || !strings.Contains(v.Reason, "deadline") {
		t.Errorf("after the deadline: %+v, want reverted for the deadline", v)
	}
	if b.file(t, b.m.RunConfig) != base || b.file(t, b.m.PermConfig) != "" {
		t.Error("after the revert the box must run the version before, and boot on it")
	}
	if got := b.calls(config.TakerForwarder); len(got) != 2 || got[1] != base {
		t.Errorf("forwarderd took %q, want the change and then the version before", got)
	}
	if !hasEvent(b.evlog, "reverted") {
		t.Error("no event says the change was reverted")
	}
}

func TestRevertOnHealth(t *testing.T) {
	b := newBox(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.m.Run(ctx)
	res, err := b.apply(t, withSeg2, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A new segment that does not forward is no reason to revert.
	b.mu.Lock()
	b.healthy["seg2"] = false
	b.mu.Unlock()
	time.Sleep(4 * b.m.Grace)
	if _, ok := b.m.Pending(); !ok {
		t.Fatal("reverted for a new segment that does not forward")
	}
	start := time.Now()
	b.mu.Lock()
	b.healthy["seg1"] = false
	b.mu.Unlock()
	v := waitSettled(t, b, res.Version.Number)
	if v.State != versions.Reverted || !strings.Contains(v.Reason, "seg1 forwarded before") {
		t.Errorf("after seg1 stopped: %+v, want reverted naming seg1", v)
	}
	if d := time.Since(start); d < b.m.Grace {
		t.Errorf("reverted %v after seg1 stopped, before its grace of %v", d, b.m.Grace)
	}
	t.Logf("reverted %v after seg1 stopped forwarding (grace %v)", time.Since(start).Round(time.Millisecond), b.m.Grace)
}

func TestNotTaken(t *testing.T) {
	b := newBox(t)
	b.failIf = func(taker, text string) error {
		if taker == config.TakerForwarder && text == withSeg2 {
			return errors.New("no such port")
		}
		return nil
	}
	res, err := b.apply(t, withSeg2, 0, time.Minute)
	if !errors.Is(err, ErrNotTaken) || !strings.Contains(err.Error(), "no such port") {
		t.Fatalf("a taker failing: %v, want ErrNotTaken with its reason", err)
	}
	if res.Version.State != versions.Reverted || b.file(t, b.m.RunConfig) != base {
		t.Errorf("after a taker failed: %+v, file in force %q; want reverted and the version before", res.Version, b.file(t, b.m.RunConfig))
	}
	if _, ok := b.m.Pending(); ok {
		t.Error("a change not taken is pending")
	}
}

func TestRefused(t *testing.T) {
	b := newBox(t)
	for _, tc := range []struct{ text, want string }{
		{strings.Replace(base, `platform = "generic"`, `platform = "qemu"`, 1), "platform needs a reboot"},
		{base + "[snmp]\ncommunity = \"long-enough-secret\"\n", "statusd does not take it in place"},
	} {
		if _, err := b.apply(t, tc.text, 0, time.Minute); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want ErrRefused saying %q", err, tc.want)
		}
	}
	delete(b.m.Takers, config.TakerBypass)
	if _, err := b.apply(t, withSeg2, 0, time.Minute); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "segment[seg2]: bypassd does not take it") {
		t.Errorf("a segment change without bypassd: %v, want ErrRefused naming bypassd", err)
	}
	if b.file(t, b.m.RunConfig) != base || len(b.calls(config.TakerForwarder)) > 0 {
		t.Error("a refused change touched the box")
	}
	if all, _ := b.m.Store.List(); len(all) != 0 {
		t.Errorf("a refused change left versions: %+v", all)
	}
}

// TestResume: a pending version the box still runs is watched again
// after statusd restarts; one it no longer runs (the box restarted and
// booted on the version before) is marked reverted.
func TestResume(t *testing.T) {
	b := newBox(t)
	res, err := b.apply(t, withSeg2, 0, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	again := &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, Takers: b.m.Takers, Tick: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go again.Run(ctx)
	b.m = again
	if v := waitSettled(t, b, res.Version.Number); v.State != versions.Reverted || b.file(t, again.RunConfig) != base {
		t.Errorf("a resumed change past its deadline: %+v", v)
	}

	b = newBox(t)
	res, err = b.apply(t, withSeg2, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(b.m.RunConfig, []byte(base), 0o644) // the box booted on the version before
	again = &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, Takers: b.m.Takers, Tick: 20 * time.Millisecond}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go again.Run(ctx2)
	b.m = again
	if v := waitSettled(t, b, res.Version.Number); v.State != versions.Reverted || !strings.Contains(v.Reason, "restarted") {
		t.Errorf("a change the box restarted under: %+v", v)
	}
}

// waitSettled waits for version n to be confirmed or reverted: out of
// Pending, and out of Reverting, which a revert passes through.
func waitSettled(t *testing.T, b *box, n int) versions.Version {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _, err := b.m.Store.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if v.State != versions.Pending && v.State != versions.Reverting {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("version %d still pending after 5s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hasEvent waits up to two seconds for a configuration event saying word:
// the event follows the record's change.
func hasEvent(l *events.Log, word string) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, e := range l.Recent(50) {
			if e.Kind == events.KindConfig && strings.Contains(e.Message, word) {
				return true
			}
		}
	}
	return false
}

// TestHold: the relays of the segments a change re-attaches are held in
// bypass while the daemons take it, and when it is reverted; a segment
// the change adds is not (it has no traffic yet).
func TestHold(t *testing.T) {
	b := newBox(t)
	var log []string
	b.m.Hold = func(_ context.Context, segs []string) (func(context.Context), error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		log = append(log, "hold "+strings.Join(segs, ","))
		return func(context.Context) {
			b.mu.Lock()
			defer b.mu.Unlock()
			log = append(log, "release")
		}, nil
	}
	inner := b.m.Takers[config.TakerForwarder]
	b.m.Takers[config.TakerForwarder] = TakerFunc(func(ctx context.Context) error {
		b.mu.Lock()
		log = append(log, "forwarderd takes")
		b.mu.Unlock()
		return inner.Take(ctx)
	})
	changed := strings.Replace(withSeg2, "ports = [\"LAN1\", \"LAN2\"]\n", "ports = [\"LAN1\", \"LAN2\"]\nmtu = 9000\n", 1)
	res, err := b.apply(t, changed, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.m.Revert(context.Background(), res.Version.Number, "test"); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if want := "hold seg1;forwarderd takes;release;hold seg1;forwarderd takes;release"; strings.Join(log, ";") != want {
		t.Errorf("%q, want %q", strings.Join(log, ";"), want)
	}
}

// TestResumeConfirmedAtOnce: a version applied without a deadline and cut
// off before its confirmation was recorded is confirmed when the box came
// up on it, reverted when it came up on the version before.
func TestResumeConfirmedAtOnce(t *testing.T) {
	for _, runs := range []bool{true, false} {
		b := newBox(t)
		v, err := b.m.Store.Add([]byte(withSeg2), versions.Version{By: "ncpos", State: versions.Pending})
		if err != nil {
			t.Fatal(err)
		}
		if runs {
			os.WriteFile(b.m.RunConfig, []byte(withSeg2), 0o644)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go b.m.Run(ctx)
		got := waitSettled(t, b, v.Number)
		cancel()
		if want := map[bool]versions.State{true: versions.Confirmed, false: versions.Reverted}[runs]; got.State != want {
			t.Errorf("the box runs it: %v; settled %s (%s), want %s", runs, got.State, got.Reason, want)
		}
	}
}

// TestReattachMeasured: the plan says a re-attach takes about a second
// until the box has measured one; then it says what the last one took.
func TestReattachMeasured(t *testing.T) {
	b := newBox(t)
	inner := b.m.Takers[config.TakerForwarder]
	b.m.Takers[config.TakerForwarder] = TakerFunc(func(ctx context.Context) error {
		time.Sleep(30 * time.Millisecond)
		return inner.Take(ctx)
	})
	changed := strings.Replace(base, "ports = [\"LAN1\", \"LAN2\"]\n", "ports = [\"LAN1\", \"LAN2\"]\nmtu = 9000\n", 1)
	if b.m.Reattach() != DefaultReattach {
		t.Errorf("before any re-attach: %v, want %v", b.m.Reattach(), DefaultReattach)
	}
	res, err := b.apply(t, changed, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].AwayMS != int(DefaultReattach.Milliseconds()) {
		t.Errorf("the first re-attach's changes: %+v, want seg1 away for the default", res.Changes)
	}
	if d := b.m.Reattach(); d < 30*time.Millisecond || d > 500*time.Millisecond {
		t.Errorf("after a re-attach of 30 ms: %v", d)
	}
}
