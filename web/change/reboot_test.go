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
)

// rebooter records the reboots a manager asks for.
type rebooter struct {
	mu      sync.Mutex
	reasons []string
	fail    error
}

func (r *rebooter) reboot(_ context.Context, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
	return r.fail
}

func (r *rebooter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reasons)
}

// qemu is base on another platform, with statusd to watch it: a change
// only a boot takes.
var qemu = strings.Replace(strings.Replace(base, `platform = "generic"`, `platform = "qemu"`, 1),
	`services = ["forwarderd", "bypassd"]`, `services = ["forwarderd", "bypassd", "statusd"]`, 1)

func rebootBox(t *testing.T) (*box, *rebooter) {
	b := newBox(t)
	r := &rebooter{}
	b.m.TrialConfig = filepath.Join(filepath.Dir(b.m.RunConfig), "trial.toml")
	b.m.Reboot = r.reboot
	os.WriteFile(b.m.PermConfig, []byte(base), 0o600)
	return b, r
}

func (b *box) applyReboot(t *testing.T, text string, replaces int, within time.Duration) (Applied, error) {
	t.Helper()
	next, err := config.Parse("candidate", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return b.m.Apply(context.Background(), Request{Text: []byte(text), Next: next, Replaces: replaces, ConfirmWithin: within, By: "ncpos", From: "192.0.2.1", Reboot: true})
}

// TestApplyByReboot: a change only a boot takes is refused unless the
// caller lets the box reboot; then the box boots on it once, and the
// version before stays where the box boots from until it is confirmed.
// After the reboot (a manager started again on the trial) it is
// confirmed, or reverted by a reboot when its deadline passes.
func TestApplyByReboot(t *testing.T) {
	b, r := rebootBox(t)
	if _, err := b.apply(t, qemu, 0, time.Minute); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "apply it with a reboot") {
		t.Errorf("without a reboot: %v, want ErrRefused saying to apply it with a reboot", err)
	}
	unwatched := strings.Replace(base, `platform = "generic"`, `platform = "qemu"`, 1)
	if _, err := b.applyReboot(t, unwatched, 0, time.Minute); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "needs statusd") {
		t.Errorf("a trial without statusd to watch it: %v, want ErrRefused saying it needs statusd", err)
	}
	res, err := b.applyReboot(t, qemu, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.m.Confirm(res.Version.Number, "ncpos"); !errors.Is(err, ErrNotPending) || !strings.Contains(err.Error(), "not booted on it yet") {
		t.Errorf("confirmed before the box booted on it: %v, want refused", err)
	}
	if !res.Rebooting || !res.Version.Reboot || res.Version.State != versions.Pending || r.count() != 1 {
		t.Errorf("applied %+v, rebooting %v, %d reboots: want a pending version and one reboot", res.Version, res.Rebooting, r.count())
	}
	if b.file(t, b.m.TrialConfig) != qemu || b.file(t, b.m.PermConfig) != base || b.file(t, b.m.RunConfig) != base {
		t.Error("before the reboot: want the trial holding the change, and the boot's and the running configuration as before")
	}
	if len(b.calls(config.TakerForwarder)) > 0 {
		t.Error("a change taken by a reboot was given to the daemons")
	}
	if _, err := b.apply(t, withSeg2, 0, time.Minute); !errors.Is(err, ErrBusy) {
		t.Errorf("another change before the reboot: %v, want ErrBusy", err)
	}

	// The box boots on the trial (init removes it) and statusd starts
	// again: it watches the change, and a confirmation keeps it.
	boot := func(b *box) *Manager {
		os.Remove(b.m.TrialConfig)
		os.WriteFile(b.m.RunConfig, []byte(qemu), 0o644)
		again := &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, PermConfig: b.m.PermConfig, LastGood: b.m.LastGood,
			TrialConfig: b.m.TrialConfig, Reboot: b.m.Reboot, Takers: b.m.Takers, Events: b.evlog, Tick: 20 * time.Millisecond,
			Health: b.m.Health, Grace: b.m.Grace, BootWindow: 500 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go again.Run(ctx)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, ok := again.Pending(); ok {
				return again
			}
			if time.Now().After(deadline) {
				t.Fatal("the change is not watched again after the reboot")
			}
		}
	}
	b.m = boot(b)
	if _, err := b.m.Confirm(res.Version.Number, "ncpos"); err != nil {
		t.Fatal(err)
	}
	if b.file(t, b.m.PermConfig) != qemu || b.file(t, b.m.LastGood) != qemu || r.count() != 1 {
		t.Errorf("confirmed after the reboot: the box boots on %q, %d reboots", b.file(t, b.m.PermConfig), r.count())
	}

	// Never confirmed: reverted by a reboot when the deadline passes.
	b, r = rebootBox(t)
	res, err = b.applyReboot(t, qemu, 0, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	b.m = boot(b)
	v := waitSettled(t, b, res.Version.Number)
	if v.State != versions.Reverted || !strings.Contains(v.Reason, "deadline") || b.file(t, b.m.PermConfig) != base {
		t.Errorf("never confirmed: %+v, the box boots on %q", v, b.file(t, b.m.PermConfig))
	}
	for deadline := time.Now().Add(2 * time.Second); r.count() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reboots, want the one to take it and one to go back", r.count())
		}
	}
	if !hasEvent(b.evlog, "reboots to go back") {
		t.Error("no event says the box reboots to go back")
	}

	// Going back, the reboot fails: it is tried again until it is under
	// way.
	b, r = rebootBox(t)
	if res, err = b.applyReboot(t, qemu, 0, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.fail = errors.New("gokrazy does not answer")
	r.mu.Unlock()
	b.m = boot(b)
	waitState(t, b, res.Version.Number, versions.Reverting)
	for deadline := time.Now().Add(2 * time.Second); r.count() < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reboots asked, want the failed one to be asked again", r.count())
		}
	}
	r.mu.Lock()
	r.fail = nil
	r.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	n := r.count()
	time.Sleep(100 * time.Millisecond)
	if r.count() != n {
		t.Errorf("a reboot under way is asked again: %d, then %d", n, r.count())
	}
}

// TestRebootBootWindow: after the box restarted under a change, the
// change has the boot window to run well once before its health counts;
// one that never does is reverted when the window ends, not at the first
// daemon still starting.
func TestRebootBootWindow(t *testing.T) {
	b, r := rebootBox(t)
	b.down = true // forwarderd still starting
	res, err := b.applyReboot(t, qemu, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(b.m.TrialConfig)
	os.WriteFile(b.m.RunConfig, []byte(qemu), 0o644)
	again := &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, PermConfig: b.m.PermConfig, TrialConfig: b.m.TrialConfig, Reboot: b.m.Reboot,
		Takers: b.m.Takers, Health: b.m.Health, Grace: 50 * time.Millisecond, BootWindow: 600 * time.Millisecond, Tick: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go again.Run(ctx)
	b.m = again
	v := waitSettled(t, b, res.Version.Number)
	if took := time.Since(start); v.State != versions.Reverted || !strings.Contains(v.Reason, "of its start") || took < 600*time.Millisecond {
		t.Errorf("never running well after its boot: %+v after %v, want reverted once the window ended", v, took)
	}
	// The reboot back follows the record.
	for deadline := time.Now().Add(2 * time.Second); r.count() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reboots, want one to take it and one to go back", r.count())
		}
	}

	// Confirmed, and cut off before the record said so: confirmed as the
	// box starts again, not reverted.
	b, _ = rebootBox(t)
	if res, err = b.applyReboot(t, qemu, 0, time.Hour); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(b.m.RunConfig, []byte(qemu), 0o644)
	os.WriteFile(b.m.PermConfig, []byte(qemu), 0o600)
	again = &Manager{Store: b.m.Store, RunConfig: b.m.RunConfig, PermConfig: b.m.PermConfig, Takers: b.m.Takers, Tick: 20 * time.Millisecond}
	go again.Run(ctx)
	b.m = again
	if v := waitSettled(t, b, res.Version.Number); v.State != versions.Confirmed {
		t.Errorf("a version kept where the box boots from before the power cut: %+v, want confirmed", v)
	}
}

// TestApplyByRebootAtOnce: confirmed at once, the change is where the box
// boots from before it reboots; a reboot that fails leaves the box as it
// was and the version reverted.
func TestApplyByRebootAtOnce(t *testing.T) {
	b, r := rebootBox(t)
	res, err := b.applyReboot(t, qemu, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version.State != versions.Confirmed || !res.Rebooting || b.file(t, b.m.PermConfig) != qemu || b.file(t, b.m.TrialConfig) != "" || r.count() != 1 {
		t.Errorf("confirmed at once: %+v, boots on %q, trial %q, %d reboots", res.Version, b.file(t, b.m.PermConfig), b.file(t, b.m.TrialConfig), r.count())
	}

	for _, within := range []time.Duration{0, time.Minute} {
		b, r = rebootBox(t)
		r.fail = errors.New("gokrazy does not answer")
		res, err = b.applyReboot(t, qemu, 0, within)
		if !errors.Is(err, ErrNotTaken) || !strings.Contains(err.Error(), "gokrazy does not answer") {
			t.Errorf("within %v, the reboot failing: %v, want ErrNotTaken with its reason", within, err)
		}
		if res.Version.State != versions.Reverted || b.file(t, b.m.PermConfig) != base || b.file(t, b.m.LastGood) != base && b.file(t, b.m.LastGood) != "" || b.file(t, b.m.TrialConfig) != "" {
			t.Errorf("within %v, the reboot failing: %+v, boots on %q, trial %q", within, res.Version, b.file(t, b.m.PermConfig), b.file(t, b.m.TrialConfig))
		}
		if _, ok := b.m.Pending(); ok {
			t.Errorf("within %v, the reboot failing: a change still pending", within)
		}
	}

	b = newBox(t) // no way to reboot
	if _, err := b.applyReboot(t, qemu, 0, time.Minute); !errors.Is(err, ErrRefused) {
		t.Errorf("a box that cannot reboot: %v, want ErrRefused", err)
	}
}
