// Package apply changes the box's configuration in place, with a confirm
// deadline: a new version is written to the configuration every daemon
// runs on (/run/ncpos/config.toml), the daemons it concerns take it
// without a restart, and until it is confirmed the box goes back to the
// version it replaced by itself, in place, when the deadline passes or
// earlier when the change made a configured daemon not live or a segment
// that forwarded before stop forwarding (package verdict). Only a
// confirmed version is written where the box boots from, so a box that
// restarts while a change is unconfirmed comes up on the version before.
package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/verdict"
	"github.com/ncpos/ncpos/web/api"
)

// Taker is a daemon (or the box itself) that takes its part of a
// configuration in place: it reads the configuration file again.
type Taker interface {
	Take(ctx context.Context) error
}

// Partial is a Taker that takes only some of its settings in place; a
// change to another is refused.
type Partial interface {
	Taker
	Takes(setting string) bool
}

// TakerFunc is a Taker from a function.
type TakerFunc func(ctx context.Context) error

// Take calls f.
func (f TakerFunc) Take(ctx context.Context) error { return f(ctx) }

// Health reads what the verdict of a change looks at: the segments and
// the daemons, as statusd shows them.
type Health func(ctx context.Context) ([]api.Segment, []api.Daemon, error)

// Manager applies, confirms and reverts configuration versions. One
// change is under way at a time.
type Manager struct {
	Store *versions.Store
	// RunConfig is the file every daemon runs on (appliance.BootConfig).
	RunConfig string
	// PermConfig is the file the box boots on (appliance.PermConfig),
	// and LastGood the one it falls back to (appliance.LastGoodConfig):
	// both are written when a version is confirmed.
	PermConfig, LastGood string
	// Source is where the box took the configuration it booted on.
	Source string
	// Takers take settings in place, by config.Taker* name. A change
	// to a setting whose taker is missing is refused.
	Takers map[string]Taker
	Health Health
	// Hold puts the relays of the segments a change re-attaches in
	// bypass while the takers take it, so that their traffic crosses the
	// relays instead of being lost; release lets them return to normal.
	// nil: nothing is held.
	Hold func(ctx context.Context, segments []string) (release func(context.Context), err error)
	// TrialConfig is the file the box boots on once, next, to take a
	// change that needs a reboot (appliance.TrialConfig): init removes it
	// as it boots on it, so that a box that restarts again before the
	// change is confirmed comes up on PermConfig, the version before.
	// Reboot restarts the box. Without both, such a change is refused.
	TrialConfig string
	Reboot      func(ctx context.Context, reason string) error
	Events      *events.Log // nil: none
	// Grace is how long a daemon may stay not live, or a segment that
	// forwarded before may stay not forwarding, after a change before
	// the box reverts it (15 s when 0).
	Grace time.Duration
	// Tick is how often the deadline and the health are checked (1 s
	// when 0).
	Tick time.Duration
	// BootWindow is how long a change the box restarted under (a change
	// taken by a reboot, or statusd started again) has to run well once
	// before its health counts against it, the daemons and segments
	// starting meanwhile (2 min when 0).
	BootWindow time.Duration

	mu      sync.Mutex
	pending *change // set with setPending
	// parent is the pending change's parent text, for Settled, which the
	// monitor calls while the manager may wait for the monitor (Health).
	parent atomic.Pointer[[]byte]
	// reattach is what the last re-attach took forwarderd, in
	// nanoseconds (0: none yet), for the plan's estimate.
	reattach atomic.Int64
	// owed is why the box owes a reboot back onto a version before, one
	// that failed: it is tried again every tick ("" when none).
	owed string
}

// setPending makes p the change waiting for its confirmation (m.mu held).
func (m *Manager) setPending(p *change) {
	m.pending = p
	if p == nil {
		m.parent.Store(nil)
	} else {
		m.parent.Store(&p.parent)
	}
}

// change is the version waiting for its confirmation.
type change struct {
	version versions.Version
	parent  []byte           // the text it replaced
	takers  []string         // who took it
	held    []string         // the segments re-attached (Hold)
	before  verdict.Baseline // the segments before it, those it keeps
	badFrom time.Time        // since when the verdict refuses it; zero while it accepts
	reboot  bool             // taken by a reboot: it goes back by one
	// booting: the box restarted under it; the health counts once it
	// ran well, or once the boot window, until then, has passed.
	booting time.Time
}

// DefaultReattach is what the plan says a re-attach takes before the box
// has measured one: about what forwarderd took in the VM tests.
const DefaultReattach = time.Second

// Reattach is what the last change that re-attached segments took
// forwarderd on this box, DefaultReattach before any.
func (m *Manager) Reattach() time.Duration {
	if d := m.reattach.Load(); d > 0 {
		return time.Duration(d)
	}
	return DefaultReattach
}

// DefaultConfirmWithin is the confirm deadline when a request names none.
const DefaultConfirmWithin = 10 * time.Minute

// MaxConfirmWithin bounds a confirm deadline.
const MaxConfirmWithin = 24 * time.Hour

// Request is a change to apply.
type Request struct {
	Text []byte
	Next *config.Config // Text, parsed and valid
	// Replaces is the version in force the caller saw (0: the one the
	// box booted on, when no version was applied since).
	Replaces int
	// ConfirmWithin is the deadline; 0: confirmed at once.
	ConfirmWithin time.Duration
	Comment       string
	By, From      string
	// Rollback is the version the text is the text of, for a rollback.
	Rollback int
	// Reboot lets a change that needs a reboot take one; a change the
	// daemons take in place is taken in place all the same.
	Reboot bool
}

// Applied is what Apply did.
type Applied struct {
	Version versions.Version `json:"version"`
	Changes []config.Change  `json:"changes"`
	// Took is how long each taker took, in milliseconds, by name.
	Took map[string]float64 `json:"took_ms"`
	// Rebooting: the box reboots to take it.
	Rebooting bool `json:"rebooting,omitempty"`
}

// Errors of Apply, Confirm and Revert, which the API maps to its codes.
var (
	// ErrStale: the caller's version is not the one in force.
	ErrStale = errors.New("the configuration in force is not the version the change replaces")
	// ErrBusy: another change waits for its confirmation.
	ErrBusy = errors.New("a change waits for its confirmation")
	// ErrRefused: the change needs a reboot, or a taker this box lacks.
	ErrRefused = errors.New("the box cannot take this change in place")
	// ErrUnchanged: the candidate is the configuration in force.
	ErrUnchanged = errors.New("the candidate is the configuration in force")
	// ErrNotPending: no such version waits for its confirmation.
	ErrNotPending = errors.New("no such version waits for its confirmation")
	// ErrNotTaken: a taker failed; the box went back to the version in
	// force before.
	ErrNotTaken = errors.New("the change was not taken and was reverted")
)

// InForce is the configuration in force and its version (0 when it is
// not one of the store's).
func (m *Manager) InForce() ([]byte, int, error) {
	text, err := os.ReadFile(m.RunConfig)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the configuration in force: %w", err)
	}
	// A damaged record is no reason to refuse a change: the store's
	// next version is numbered past it all the same.
	v, _ := m.Store.VersionOf(text)
	return text, v.Number, nil
}

// Settled is the configuration the box last settled on: the one in
// force, or while a change waits for its confirmation, the one it
// replaced. It is what the box may keep as its last good configuration.
func (m *Manager) Settled() ([]byte, error) {
	if p := m.parent.Load(); p != nil {
		return *p, nil
	}
	return os.ReadFile(m.RunConfig)
}

// Pending is the version waiting for its confirmation, if any.
func (m *Manager) Pending() (versions.Version, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil {
		return versions.Version{}, false
	}
	return m.pending.version, true
}

// Apply takes a new version in place.
func (m *Manager) Apply(ctx context.Context, req Request) (Applied, error) {
	// The segments before, read before the lock: Health may wait for
	// the monitor, which asks Settled.
	before, err := m.baseline(ctx, req.Next)
	if err != nil {
		return Applied{}, fmt.Errorf("reading the segments before the change: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending != nil {
		return Applied{}, fmt.Errorf("%w: version %d, until %s; confirm it or revert it first", ErrBusy,
			m.pending.version.Number, m.pending.version.Deadline.Format(time.RFC3339))
	}
	if req.ConfirmWithin < 0 || req.ConfirmWithin > MaxConfirmWithin {
		return Applied{}, fmt.Errorf("%w: a confirm deadline of %v, want 0 to %v", ErrRefused, req.ConfirmWithin, MaxConfirmWithin)
	}
	text, number, err := m.InForce()
	if err != nil {
		return Applied{}, err
	}
	if req.Replaces != number {
		return Applied{}, fmt.Errorf("%w: version %d is in force, the change replaces %d", ErrStale, number, req.Replaces)
	}
	cur, err := config.Parse("configuration in force", text)
	if err != nil {
		return Applied{}, fmt.Errorf("the configuration in force does not parse: %w", err)
	}
	changes := config.Plan(cur, req.Next)
	if len(changes) == 0 {
		return Applied{}, ErrUnchanged
	}
	config.Estimate(cur, req.Next, changes, m.Reattach())
	boot := req.Reboot && config.Disturbs(changes) == config.EffectReboot
	var takers []string
	if boot {
		switch {
		case m.Reboot == nil || m.TrialConfig == "":
			return Applied{}, fmt.Errorf("%w: this box cannot reboot to take a change", ErrRefused)
		case req.ConfirmWithin > 0 && !slices.Contains(req.Next.Services, config.TakerStatus):
			// Nothing would watch it: the box would stay on it.
			return Applied{}, fmt.Errorf("%w: a change taken by a reboot needs statusd among the services to watch it until it is confirmed", ErrRefused)
		}
	} else if takers, err = m.takersOf(changes); err != nil {
		return Applied{}, err
	}
	if number == 0 {
		// The configuration the box booted on becomes a version, so
		// that the history starts with it and a rollback can reach it.
		v, err := m.Store.Add(text, versions.Version{By: "box", Source: m.Source, State: versions.Confirmed,
			Comment: "the configuration the box booted on"})
		if err != nil {
			return Applied{}, err
		}
		number = v.Number
	}
	v := versions.Version{Parent: number, By: req.By, From: req.From, Comment: req.Comment, State: versions.Pending, Reboot: boot}
	if req.ConfirmWithin > 0 {
		v.Deadline = time.Now().Add(req.ConfirmWithin).UTC()
	}
	if v, err = m.Store.Add(req.Text, v); err != nil {
		return Applied{}, err
	}
	res := Applied{Version: v, Changes: changes}
	what := fmt.Sprintf("configuration version %d applied by %s from %s (%s)", v.Number, req.By, req.From, summary(changes))
	if req.Rollback > 0 {
		what = fmt.Sprintf("configuration version %d (a rollback to version %d) applied by %s from %s (%s)", v.Number, req.Rollback, req.By, req.From, summary(changes))
	}
	if boot {
		return m.rebootInto(ctx, res, req.Text, text, what)
	}
	held := reattached(cur, changes)
	if res.Took, err = m.takeHeld(ctx, req.Text, takers, held); err != nil {
		why := err.Error()
		if _, rerr := m.takeHeld(context.WithoutCancel(ctx), text, takers, held); rerr != nil {
			why += "; going back: " + rerr.Error()
		}
		if v, serr := m.Store.Settle(v.Number, versions.Reverted, "not taken: "+why); serr == nil {
			res.Version = v
		}
		m.event(events.Warning, v.Number, "configuration version %d by %s not taken, back on version %d: %s", v.Number, req.By, number, why)
		return res, fmt.Errorf("%w: %s", ErrNotTaken, why)
	}
	if ms := res.Took[config.TakerForwarder]; len(held) > 0 && ms > 0 {
		m.reattach.Store(int64(ms * float64(time.Millisecond)))
	}
	if req.ConfirmWithin == 0 {
		var cerr error
		if res.Version, cerr = m.confirm(v, req.Text, "applied without a confirm deadline"); cerr != nil {
			// Not kept where the box boots from: it goes back, there
			// too, rather than run a version it would not boot on.
			m.setPending(&change{version: v, parent: text, takers: takers, held: held, before: before})
			m.restore(text)
			if rv, err := m.revert(ctx, "could not be kept where the box boots from: "+cerr.Error()); err == nil {
				res.Version = rv
			}
			return res, fmt.Errorf("%w: keeping it where the box boots from: %v", ErrNotTaken, cerr)
		}
		m.event(events.Notice, v.Number, "%s, confirmed", what)
		return res, nil
	}
	m.setPending(&change{version: v, parent: text, takers: takers, held: held, before: before})
	m.event(events.Notice, v.Number, "%s; it reverts by itself unless confirmed by %s", what, v.Deadline.Format(time.RFC3339))
	return res, nil
}

// rebootInto has the box take res.Version, whose text is text, by a
// reboot (m.mu held): for good when it is confirmed at once, else once,
// as its trial (TrialConfig), waiting for its confirmation when the box is
// up again. parent is the text in force.
func (m *Manager) rebootInto(ctx context.Context, res Applied, text, parent []byte, what string) (Applied, error) {
	v := res.Version
	fail := func(why string, undo func()) (Applied, error) {
		undo()
		if sv, err := m.Store.Settle(v.Number, versions.Reverted, "not taken: "+why); err == nil {
			res.Version = sv
		}
		m.event(events.Warning, v.Number, "configuration version %d not taken, the box stays on version %d: %s", v.Number, v.Parent, why)
		return res, fmt.Errorf("%w: %s", ErrNotTaken, why)
	}
	var undo func()
	if v.Deadline.IsZero() {
		undo = func() { m.restore(parent) }
		// Confirmed once the reboot is under way; should the box go
		// down before it records that, it does so as it starts again.
		if err := m.keep(v.Number, text); err != nil {
			return fail(err.Error(), undo)
		}
	} else {
		undo = func() { durable.Remove(m.TrialConfig) }
		if err := durable.WriteFile(m.TrialConfig, text, 0o600); err != nil {
			return fail(fmt.Sprintf("writing %s: %v", m.TrialConfig, err), undo)
		}
		m.setPending(&change{version: v, parent: parent, reboot: true})
		m.event(events.Notice, v.Number, "%s; the box reboots to take it, and reboots back unless it is confirmed by %s", what, v.Deadline.Format(time.RFC3339))
	}
	if err := m.Reboot(ctx, fmt.Sprintf("configuration version %d", v.Number)); err != nil {
		m.setPending(nil)
		return fail("rebooting: "+err.Error(), undo)
	}
	res.Rebooting = true
	if v.Deadline.IsZero() {
		if cv, err := m.Store.Settle(v.Number, versions.Confirmed, "applied without a confirm deadline, by a reboot"); err == nil {
			res.Version = cv
		}
		m.event(events.Notice, v.Number, "%s, confirmed; the box reboots to take it", what)
	}
	return res, nil
}

// summary names the settings a change touches.
func summary(changes []config.Change) string {
	var s []string
	for _, c := range changes {
		s = append(s, c.Setting)
	}
	return strings.Join(s, ", ")
}

// takerOrder is the order in which takers take a change: the datapath
// first, statusd (which serves the operator) last, after the box's own
// settings, its hostname among them.
var takerOrder = []string{config.TakerForwarder, config.TakerBypass, config.TakerWatchdog, config.TakerInit, config.TakerStatus}

// takersOf returns who takes the changes, in takerOrder, or why the box
// cannot take them in place.
func (m *Manager) takersOf(changes []config.Change) ([]string, error) {
	var refused []string
	need := map[string]bool{}
	// statusd shows every setting (segments, ports, the self-test's
	// cabling): it takes every change it can.
	need[config.TakerStatus] = m.Takers[config.TakerStatus] != nil
	for _, c := range changes {
		takers := []string{c.Taker}
		if strings.HasPrefix(c.Setting, "segment[") {
			// bypassd follows which pair belongs to which segment.
			takers = append(takers, config.TakerBypass)
		}
		for _, t := range takers {
			switch {
			case c.Effect == config.EffectReboot:
				refused = append(refused, fmt.Sprintf("%s needs a reboot (%s)", c.Setting, c.Detail))
			case c.Effect == config.EffectNone && m.Takers[t] == nil:
			case m.Takers[t] == nil || !takes(m.Takers[t], c.Setting):
				refused = append(refused, fmt.Sprintf("%s: %s does not take it in place in this build", c.Setting, t))
			default:
				need[t] = true
			}
		}
	}
	refused = slices.Compact(refused)
	if len(refused) > 0 {
		err := fmt.Errorf("%w: %s", ErrRefused, strings.Join(refused, "; "))
		if config.Disturbs(changes) == config.EffectReboot {
			err = fmt.Errorf("%w (apply it with a reboot: the box boots on it once, and back unless it is confirmed)", err)
		}
		return nil, err
	}
	var out []string
	for _, t := range takerOrder {
		if need[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// takes says whether t takes setting in place.
func takes(t Taker, setting string) bool {
	p, ok := t.(Partial)
	return !ok || p.Takes(setting)
}

// reattached are the segments of cur a change re-attaches: those whose
// relays Hold keeps in bypass meanwhile. A segment the change adds has
// no traffic yet.
func reattached(cur *config.Config, changes []config.Change) []string {
	var out []string
	for _, c := range changes {
		if c.Effect != config.EffectReattach {
			continue
		}
		for _, name := range c.Segments {
			exists := slices.ContainsFunc(cur.Segments, func(s config.Segment) bool { return s.Name == name })
			if exists && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// takeHeld is take with the relays of segments held in bypass meanwhile.
func (m *Manager) takeHeld(ctx context.Context, text []byte, takers []string, segments []string) (map[string]float64, error) {
	if m.Hold != nil && len(segments) > 0 {
		release, err := m.Hold(ctx, segments)
		if err != nil {
			return nil, fmt.Errorf("putting the relays of %s in bypass: %w", strings.Join(segments, ", "), err)
		}
		defer release(context.WithoutCancel(ctx))
	}
	return m.take(ctx, text, takers)
}

// take writes text where every daemon reads its configuration and has
// the takers take it, in order, stopping at the first that fails.
func (m *Manager) take(ctx context.Context, text []byte, takers []string) (map[string]float64, error) {
	if err := durable.WriteFile(m.RunConfig, text, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", m.RunConfig, err)
	}
	took := map[string]float64{}
	for _, name := range takers {
		t := m.Takers[name]
		if t == nil {
			continue
		}
		start := time.Now()
		if err := t.Take(ctx); err != nil {
			return took, fmt.Errorf("%s: %w", name, err)
		}
		took[name] = float64(time.Since(start).Microseconds()) / 1000
	}
	return took, nil
}

// baseline reads the segments before a change, less those next removes:
// a segment removed is meant to stop forwarding.
func (m *Manager) baseline(ctx context.Context, next *config.Config) (verdict.Baseline, error) {
	if m.Health == nil {
		return verdict.Baseline{}, nil
	}
	segs, _, err := m.Health(ctx)
	if err != nil {
		return nil, err
	}
	b := verdict.BaselineOf(segs)
	for name := range b {
		if !slices.ContainsFunc(next.Segments, func(s config.Segment) bool { return s.Name == name }) {
			delete(b, name)
		}
	}
	return b, nil
}

// Confirm confirms the pending version n.
func (m *Manager) Confirm(n int, by string) (versions.Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pending
	if p == nil || p.version.Number != n {
		return versions.Version{}, fmt.Errorf("%w: version %d", ErrNotPending, n)
	}
	_, text, err := m.Store.Get(n)
	if err != nil {
		return versions.Version{}, err
	}
	if p.reboot {
		if run, err := os.ReadFile(m.RunConfig); err != nil || versions.Sum(run) != p.version.SHA256 {
			return versions.Version{}, fmt.Errorf("%w: version %d is taken by a reboot, and the box has not booted on it yet", ErrNotPending, n)
		}
	}
	v, err := m.confirm(p.version, text, "confirmed by "+by)
	if err != nil {
		return v, err
	}
	m.setPending(nil)
	m.event(events.Notice, n, "configuration version %d confirmed by %s", n, by)
	return v, nil
}

// confirm makes v the version the box boots on and its last good one.
func (m *Manager) confirm(v versions.Version, text []byte, reason string) (versions.Version, error) {
	if err := m.keep(v.Number, text); err != nil {
		return v, err
	}
	return m.Store.Settle(v.Number, versions.Confirmed, reason)
}

// restore puts text back where the box boots from and as its last good
// configuration, as well as it can: it undoes a keep that went wrong.
func (m *Manager) restore(text []byte) {
	for _, path := range []string{m.PermConfig, m.LastGood} {
		if path != "" {
			durable.WriteFile(path, text, 0o600)
		}
	}
}

// keep writes the text of version n where the box boots from and as its
// last good configuration.
func (m *Manager) keep(n int, text []byte) error {
	for _, path := range []string{m.PermConfig, m.LastGood} {
		if path == "" {
			continue
		}
		if err := durable.WriteFile(path, text, 0o600); err != nil {
			return fmt.Errorf("keeping version %d in %s: %w", n, path, err)
		}
	}
	return nil
}

// Revert goes back from the pending version n to the version it replaced,
// in place, saying why.
func (m *Manager) Revert(ctx context.Context, n int, why string) (versions.Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil || m.pending.version.Number != n {
		return versions.Version{}, fmt.Errorf("%w: version %d", ErrNotPending, n)
	}
	return m.revert(ctx, why)
}

// revert undoes the pending change (m.mu held).
func (m *Manager) revert(ctx context.Context, why string) (versions.Version, error) {
	p := m.pending
	m.setPending(nil)
	if p.reboot {
		return m.rebootBack(ctx, p, why)
	}
	start := time.Now()
	_, err := m.takeHeld(ctx, p.parent, p.takers, p.held)
	if err != nil {
		why += "; going back: " + err.Error()
	}
	v, serr := m.Store.Settle(p.version.Number, versions.Reverted, why)
	m.event(events.Warning, p.version.Number, "configuration version %d reverted to version %d in %v: %s",
		p.version.Number, p.version.Parent, time.Since(start).Round(time.Millisecond), why)
	return v, errors.Join(err, serr)
}

// rebootBack undoes a change taken by a reboot: the box boots on the
// version before, which PermConfig still holds.
func (m *Manager) rebootBack(ctx context.Context, p *change, why string) (versions.Version, error) {
	v, serr := m.Store.Settle(p.version.Number, versions.Reverted, why)
	m.event(events.Warning, p.version.Number, "configuration version %d reverted to version %d: %s; the box reboots to go back",
		p.version.Number, p.version.Parent, why)
	reason := fmt.Sprintf("configuration version %d reverted", p.version.Number)
	err := durable.Remove(m.TrialConfig)
	if err == nil {
		err = m.Reboot(ctx, reason)
	}
	if err != nil {
		// Tried again every tick: the box must not stay on it.
		m.owed = reason
		err = fmt.Errorf("going back to version %d by a reboot: %w", p.version.Parent, err)
		m.event(events.Warning, p.version.Number, "%v; trying again", err)
	}
	return v, errors.Join(err, serr)
}

// Run watches the pending change until ctx ends: it reverts it when its
// deadline passes, or when the verdict has refused it for Grace. A
// version the store holds as pending at start is the one the box ran on
// before statusd restarted, and is watched again; or the box restarted
// meanwhile and booted on the version before, and it is marked reverted.
func (m *Manager) Run(ctx context.Context) {
	m.resume(ctx)
	tick := m.Tick
	if tick <= 0 {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.watch(ctx)
		}
	}
}

// resume picks up the versions the store holds as pending.
func (m *Manager) resume(ctx context.Context) {
	// Under the lock from the start: a change applied meanwhile is
	// pending in the store and in force.
	m.mu.Lock()
	defer m.mu.Unlock()
	text, err := os.ReadFile(m.RunConfig)
	if err != nil {
		return
	}
	all, _ := m.Store.List()
	for _, v := range all {
		if v.State != versions.Pending {
			continue
		}
		if m.pending != nil && m.pending.version.Number == v.Number {
			continue
		}
		runs := v.SHA256 == versions.Sum(text)
		if v.Deadline.IsZero() {
			// Applied to be confirmed at once, and cut off before that
			// was recorded: the box runs it when it was kept where the
			// box boots from.
			state, why := versions.Reverted, "the box restarted while it was applied and booted on the version before"
			if runs {
				state, why = versions.Confirmed, "applied without a deadline; the box restarted before it recorded its confirmation"
			}
			m.Store.Settle(v.Number, state, why)
			continue
		}
		if kept, err := os.ReadFile(m.PermConfig); runs && err == nil && versions.Sum(kept) == v.SHA256 {
			// Confirmed, and cut off before the record said so.
			m.Store.Settle(v.Number, versions.Confirmed, "confirmed; the box restarted before it recorded that")
			continue
		}
		if !runs || m.pending != nil {
			m.Store.Settle(v.Number, versions.Reverted, "the box restarted before it was confirmed and booted on the version before")
			m.event(events.Warning, v.Number, "configuration version %d was not confirmed before the box restarted: reverted", v.Number)
			continue
		}
		_, parent, err := m.Store.Get(v.Parent)
		if err != nil {
			if m.keep(v.Number, text) == nil {
				m.Store.Settle(v.Number, versions.Confirmed, "kept: the version it replaced is no longer readable")
			}
			continue
		}
		// Held to the daemons alone until the segments are read, after
		// the lock (Health may wait for the monitor, which asks Settled).
		m.setPending(&change{version: v, parent: parent, takers: takerOrder, before: verdict.Baseline{}, reboot: v.Reboot, booting: time.Now()})
	}
	p := m.pending
	if p == nil {
		return
	}
	m.mu.Unlock()
	next, perr := config.Parse("pending version", text)
	var before verdict.Baseline
	if perr == nil {
		before, _ = m.baseline(ctx, next)
	}
	m.mu.Lock()
	if m.pending == p && before != nil {
		p.before = before
	}
}

// watch checks the pending change once.
func (m *Manager) watch(ctx context.Context) {
	m.mu.Lock()
	if m.owed != "" {
		if err := m.Reboot(ctx, m.owed); err == nil {
			m.owed = ""
		}
		m.mu.Unlock()
		return
	}
	p := m.pending
	if p != nil && !p.version.Deadline.IsZero() && time.Now().After(p.version.Deadline) {
		m.revert(ctx, "not confirmed by its deadline, "+p.version.Deadline.Format(time.RFC3339))
		p = nil
	}
	m.mu.Unlock()
	if p == nil || m.Health == nil {
		return
	}
	// Outside the lock: Health may wait for the monitor, which asks
	// Settled.
	segs, daemons, err := m.Health(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending != p {
		return // confirmed or reverted meanwhile
	}
	now := time.Now()
	if err == nil {
		err = verdict.Accept(p.before, daemons, verdict.BaselineOf(segs))
	}
	if err == nil {
		p.badFrom, p.booting = time.Time{}, time.Time{}
		return
	}
	if !p.booting.IsZero() {
		window := m.BootWindow
		if window <= 0 {
			window = 2 * time.Minute
		}
		if now.Sub(p.booting) >= window {
			m.revert(ctx, fmt.Sprintf("the box did not run well on it within %v of its start: %v", window, err))
		}
		return
	}
	if p.badFrom.IsZero() {
		p.badFrom = now
	}
	grace := m.Grace
	if grace <= 0 {
		grace = 15 * time.Second
	}
	if now.Sub(p.badFrom) >= grace {
		m.revert(ctx, fmt.Sprintf("the box did not run well on it for %v: %v", grace, err))
	}
}

// event records an event of the configuration's, which also goes to
// syslog when the box sends there.
func (m *Manager) event(sev events.Severity, version int, format string, args ...any) {
	if m.Events != nil {
		m.Events.Addf(sev, events.KindConfig, []string{"version", fmt.Sprint(version)}, format, args...)
	}
}
