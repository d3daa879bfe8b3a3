// Package apply changes the box's configuration in place, with a confirm
// deadline: a new version is written to the configuration every daemon
// runs on (/run/ncpos/config.toml), the daemons it concerns take it
// without a restart, and until it is confirmed the box goes back to the
// version it replaced by itself, in place, when the deadline passes or
// earlier when the change made a configured daemon not live or a segment
// that forwarded before stop forwarding (package verdict). Only a
// confirmed version is written where the box boots from, so a box that
// restarts while a change is unconfirmed comes up on the version before.
//
// Going back is owed until every daemon has taken the version before: a
// revert a daemon fails to take is tried again every tick, and after
// RevertAttempts or RevertWithin the box reboots onto the version it
// boots on.
//
// apply.go applies a change; pending.go watches, confirms and reverts
// it; owed.go keeps a revert that failed; resume.go picks a change up
// again when statusd restarts; reboot.go takes and undoes a change by a
// reboot.
package change

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
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/verdict"
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
// the daemons, as statusd's monitor last published them. The manager
// asks it under its lock: it must not wait (for a step of the monitor,
// say).
type Health func(ctx context.Context) ([]api.Segment, []api.Daemon, error)

// Manager applies, confirms and reverts configuration versions. One
// change is under way at a time.
type Manager struct {
	Store *versions.Store
	// RunConfig is the file every daemon runs on (appliance.BootConfig).
	RunConfig string
	// SettledFile keeps, beside RunConfig, the text a change in place
	// replaced until the change is confirmed or undone
	// (appliance.SettledConfig), so that statusd, started again, knows
	// the box runs a change and goes back from one whose record does
	// not read rather than leave it unwatched. "": kept in memory only.
	SettledFile string
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
	// Reboot restarts the box. Without both, such a change is refused;
	// without Reboot, a revert that keeps failing is only tried again.
	TrialConfig string
	Reboot      func(ctx context.Context, reason string) error
	Events      *events.Log // nil: none
	// Grace is how long a daemon may stay not live, or a segment that
	// forwarded before may stay not forwarding, after a change before
	// the box reverts it (15 s when 0).
	Grace time.Duration
	// Tick is how often the deadline and the health are checked, and a
	// revert that failed is tried again (1 s when 0).
	Tick time.Duration
	// BootWindow is how long a change the box restarted under (a change
	// taken by a reboot, or statusd started again) has to run well once
	// before its health counts against it, the daemons and segments
	// starting meanwhile (2 min when 0).
	BootWindow time.Duration
	// Tell hears the manager's conditions (a revert the box owes) each
	// time they change; nil: nobody is told. It must not wait for the
	// manager.
	Tell func([]health.Condition)
	// RevertAttempts and RevertWithin bound a revert that fails: after
	// that many failed attempts (5 when 0), or that long since the first
	// (1 min when 0), the box reboots onto the version it boots on.
	RevertAttempts int
	RevertWithin   time.Duration

	mu      sync.Mutex
	pending *change // set with setPending
	owed    *owed   // a revert the box owes; set with setOwed
	// parent is the text of the configuration the box last settled on
	// while a change is pending or being undone, for Settled, which
	// takes no lock.
	parent atomic.Pointer[[]byte]
	// cond is the owed revert as a condition, for the monitor.
	cond atomic.Pointer[health.Condition]
	// reattach is what the last re-attach took forwarderd, in
	// nanoseconds (0: none yet), for the plan's estimate.
	reattach atomic.Int64
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
	// ErrBusy: another change waits for its confirmation, or is being
	// undone.
	ErrBusy = errors.New("a change waits for its confirmation")
	// ErrRefused: the change needs a reboot, or a taker this box lacks.
	ErrRefused = errors.New("the box cannot take this change in place")
	// ErrUnchanged: the candidate is the configuration in force.
	ErrUnchanged = errors.New("the candidate is the configuration in force")
	// ErrNotPending: no such version waits for its confirmation.
	ErrNotPending = errors.New("no such version waits for its confirmation")
	// ErrNotTaken: a taker failed; the box went back to the version in
	// force before, or owes going back (versions.Reverting).
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
// force, or while a change waits for its confirmation or is being
// undone, the one it replaced. It is what the box may keep as its last
// good configuration. It takes no lock.
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
	m.mu.Lock()
	defer m.mu.Unlock()
	before, err := m.baseline(ctx, req.Next)
	if err != nil {
		return Applied{}, fmt.Errorf("reading the segments before the change: %w", err)
	}
	cur, text, number, changes, err := m.check(req)
	if err != nil {
		return Applied{}, err
	}
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
	v, due, err := m.record(req, text, number, boot)
	if err != nil {
		return Applied{}, err
	}
	res := Applied{Version: v, Changes: changes}
	what := fmt.Sprintf("configuration version %d applied by %s from %s (%s)", v.Number, req.By, req.From, summary(changes))
	if req.Rollback > 0 {
		what = fmt.Sprintf("configuration version %d (a rollback to version %d) applied by %s from %s (%s)", v.Number, req.Rollback, req.By, req.From, summary(changes))
	}
	if boot {
		return m.rebootInto(ctx, res, req.Text, text, due, what)
	}
	p := &change{version: v, due: due, parent: text, takers: takers, held: reattached(cur, changes), before: before}
	// Who runs what from here on is known beyond this process: a
	// statusd started again goes back rather than leave it unwatched.
	if err := m.markSettled(text); err != nil {
		m.Store.Settle(v.Number, versions.Reverted, "not taken: "+err.Error())
		return res, fmt.Errorf("%w: %v", ErrNotTaken, err)
	}
	if res.Took, err = m.takeHeld(ctx, req.Text, takers, p.held); err != nil {
		why := "not taken: " + err.Error()
		rv, rerr := m.revert(context.WithoutCancel(ctx), p, why)
		res.Version = rv
		if rerr != nil {
			why += "; going back: " + rerr.Error()
		}
		return res, fmt.Errorf("%w: %s", ErrNotTaken, why)
	}
	if ms := res.Took[config.TakerForwarder]; len(p.held) > 0 && ms > 0 {
		m.reattach.Store(int64(ms * float64(time.Millisecond)))
	}
	if req.ConfirmWithin == 0 {
		var cerr error
		if res.Version, cerr = m.confirm(v, req.Text, "applied without a confirm deadline"); cerr != nil {
			// Not kept where the box boots from: it goes back, there
			// too, rather than run a version it would not boot on.
			m.restore(text)
			if rv, err := m.revert(ctx, p, "could not be kept where the box boots from: "+cerr.Error()); err == nil || rv.State.Undone() {
				res.Version = rv
			}
			return res, fmt.Errorf("%w: keeping it where the box boots from: %v", ErrNotTaken, cerr)
		}
		m.clearSettled()
		m.event(events.Notice, v.Number, "%s, confirmed", what)
		return res, nil
	}
	m.setPending(p)
	m.event(events.Notice, v.Number, "%s; it reverts by itself unless confirmed by %s", what, v.Deadline.Format(time.RFC3339))
	return res, nil
}

// check refuses a request the box cannot take now (m.mu held), and
// otherwise returns the configuration in force, its text and version,
// and what the request changes.
func (m *Manager) check(req Request) (cur *config.Config, text []byte, number int, changes []config.Change, err error) {
	if m.pending != nil {
		return nil, nil, 0, nil, fmt.Errorf("%w: version %d, until %s; confirm it or revert it first", ErrBusy,
			m.pending.version.Number, m.pending.version.Deadline.Format(time.RFC3339))
	}
	if m.owed != nil {
		return nil, nil, 0, nil, fmt.Errorf("%w: the box is going back from version %d to version %d: %s", ErrBusy,
			m.owed.version.Number, m.owed.version.Parent, m.owed.failed)
	}
	if req.ConfirmWithin < 0 || req.ConfirmWithin > MaxConfirmWithin {
		return nil, nil, 0, nil, fmt.Errorf("%w: a confirm deadline of %v, want 0 to %v", ErrRefused, req.ConfirmWithin, MaxConfirmWithin)
	}
	if text, number, err = m.InForce(); err != nil {
		return nil, nil, 0, nil, err
	}
	if req.Replaces != number {
		return nil, nil, 0, nil, fmt.Errorf("%w: version %d is in force, the change replaces %d", ErrStale, number, req.Replaces)
	}
	if cur, err = config.Parse("configuration in force", text); err != nil {
		return nil, nil, 0, nil, fmt.Errorf("the configuration in force does not parse: %w", err)
	}
	if changes = Plan(cur, req.Next, m.Reattach()); len(changes) == 0 {
		return nil, nil, 0, nil, ErrUnchanged
	}
	return cur, text, number, changes, nil
}

// Plan is what taking next in place of cur changes, setting by setting:
// config.Plan's changes, with what each costs the traffic estimated
// (reattach: what a re-attach takes, Manager.Reattach). The box's plan
// and its change are worked out here alike.
func Plan(cur, next *config.Config, reattach time.Duration) []config.Change {
	changes := config.Plan(cur, next)
	if changes == nil {
		changes = []config.Change{}
	}
	config.Estimate(cur, next, changes, reattach)
	return changes
}

// record adds the request's version to the store, replacing version
// number, whose text (in force) is text: pending, with its deadline on
// the wall clock in the record and on the monotonic clock in due.
func (m *Manager) record(req Request, text []byte, number int, boot bool) (v versions.Version, due time.Time, err error) {
	if number == 0 {
		// The configuration the box booted on becomes a version, so
		// that the history starts with it and a rollback can reach it.
		boot, err := m.Store.Add(text, versions.Version{By: "box", Source: m.Source, State: versions.Confirmed,
			Comment: "the configuration the box booted on"})
		if err != nil {
			return v, due, err
		}
		number = boot.Number
	}
	v = versions.Version{Parent: number, By: req.By, From: req.From, Comment: req.Comment, State: versions.Pending, Reboot: boot}
	if req.ConfirmWithin > 0 {
		// due keeps its monotonic reading: a step of the wall clock
		// moves the record's deadline, never when the box goes back.
		due = time.Now().Add(req.ConfirmWithin)
		v.Deadline = due.UTC()
	}
	v, err = m.Store.Add(req.Text, v)
	return v, due, err
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

// markSettled keeps text, the configuration a change in place replaces,
// in SettledFile and for Settled, until the change is settled.
func (m *Manager) markSettled(text []byte) error {
	m.parent.Store(&text)
	if m.SettledFile == "" {
		return nil
	}
	if err := durable.WriteFile(m.SettledFile, text, 0o600); err != nil {
		m.parent.Store(nil)
		return fmt.Errorf("keeping the configuration in force in %s: %w", m.SettledFile, err)
	}
	return nil
}

// clearSettled says the box runs a settled configuration again.
func (m *Manager) clearSettled() {
	m.parent.Store(nil)
	if m.SettledFile != "" {
		durable.Remove(m.SettledFile)
	}
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

// event records an event of the configuration's, which also goes to
// syslog when the box sends there.
func (m *Manager) event(sev events.Severity, version int, format string, args ...any) {
	if m.Events != nil {
		m.Events.Addf(sev, events.KindConfig, []string{"version", fmt.Sprint(version)}, format, args...)
	}
}
