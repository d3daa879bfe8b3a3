package change

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/web/verdict"
)

// change is the version waiting for its confirmation.
type change struct {
	version versions.Version
	// due is when it reverts by itself, on the monotonic clock (zero:
	// no deadline); version.Deadline is the same on the wall clock,
	// for people.
	due     time.Time
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

// setPending makes p the change waiting for its confirmation (m.mu
// held); Settled then says what it replaced.
func (m *Manager) setPending(p *change) {
	m.pending = p
	if p != nil {
		m.parent.Store(&p.parent)
	}
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
	m.pending = nil
	m.clearSettled()
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
	return m.revert(ctx, m.pending, why)
}

// revert undoes change p (m.mu held): the takers take the version before
// again. Should one fail, going back is owed (owe): the record says
// reverting, and the box tries again every tick.
func (m *Manager) revert(ctx context.Context, p *change, why string) (versions.Version, error) {
	if m.pending == p {
		m.pending = nil
	}
	if p.reboot {
		return m.rebootBack(ctx, p, why)
	}
	start := time.Now()
	if _, err := m.takeHeld(ctx, p.parent, p.takers, p.held); err != nil {
		return m.owe(p, why, err)
	}
	m.clearSettled()
	v, err := m.Store.Settle(p.version.Number, versions.Reverted, why)
	m.event(events.Warning, p.version.Number, "configuration version %d reverted to version %d in %v: %s",
		p.version.Number, p.version.Parent, time.Since(start).Round(time.Millisecond), why)
	return v, err
}

// Run watches the pending change until ctx ends: it reverts it when its
// deadline passes, or when the verdict has refused it for Grace, and
// tries a revert the box owes again every tick. A change the store
// holds as pending or being reverted at start is picked up again
// (resume).
func (m *Manager) Run(ctx context.Context) {
	m.resume(ctx)
	t := time.NewTicker(m.tick())
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

func (m *Manager) tick() time.Duration {
	if m.Tick <= 0 {
		return time.Second
	}
	return m.Tick
}

// watch checks the pending change once, or tries the owed revert again.
func (m *Manager) watch(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owed != nil {
		m.retry(ctx)
		return
	}
	p := m.pending
	if p == nil {
		return
	}
	if !p.due.IsZero() && !time.Now().Before(p.due) {
		m.revert(ctx, p, "not confirmed by its deadline, "+p.version.Deadline.Format(time.RFC3339))
		return
	}
	if m.Health == nil {
		return
	}
	segs, daemons, err := m.Health(ctx)
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
			m.revert(ctx, p, fmt.Sprintf("the box did not run well on it within %v of its start: %v", window, err))
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
		m.revert(ctx, p, fmt.Sprintf("the box did not run well on it for %v: %v", grace, err))
	}
}

// ClockStepped re-expresses the pending change's deadline on the wall
// clock after the clock was stepped (the first NTP sync of a box whose
// board had the wrong time): when the box goes back does not move, it is
// on the monotonic clock, but the record, the API and a resume after a
// reboot would otherwise show a moment the step has moved.
func (m *Manager) ClockStepped() {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pending
	if p == nil || p.due.IsZero() {
		return
	}
	deadline := time.Now().Add(time.Until(p.due))
	v, err := m.Store.Redeadline(p.version.Number, deadline)
	if err != nil {
		m.event(events.Warning, p.version.Number, "the clock was stepped and the record of the deadline could not follow (%v); the change still goes back at %s", err, deadline.UTC().Format(time.RFC3339))
		p.version.Deadline = deadline.UTC()
		return
	}
	p.version = v
}
