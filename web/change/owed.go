package change

import (
	"context"
	"fmt"
	"time"

	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/ipc/health"
)

// owed is a revert the box owes: a daemon failed to take the version
// before, so the box may run a mixture of the two (the file in force
// says the version before while the daemon runs the change). It is
// tried every tick until every taker has taken it; after RevertAttempts
// failed attempts or RevertWithin, the box reboots onto the version it
// boots on, which only a confirmation changes.
type owed struct {
	version  versions.Version // the version going back (Reverting)
	parent   []byte           // the text going back to
	takers   []string
	held     []string
	why      string    // why it is undone
	failed   string    // what failed last
	since    time.Time // the first failure
	attempts int       // failed attempts
	// rebooting: only a reboot is left to do (a change taken by a
	// reboot, or a revert that failed too often); reason names it.
	rebooting bool
	reason    string
}

// DefaultRevertAttempts and DefaultRevertWithin bound a revert that
// fails before the box reboots onto the version it boots on.
const (
	defaultRevertAttempts = 5
	defaultRevertWithin   = time.Minute
)

func (m *Manager) revertBounds() (int, time.Duration) {
	attempts, within := m.RevertAttempts, m.RevertWithin
	if attempts <= 0 {
		attempts = defaultRevertAttempts
	}
	if within <= 0 {
		within = defaultRevertWithin
	}
	return attempts, within
}

// owe records that going back from p to the version before failed with
// err (m.mu held): the version is reverting, not reverted, a critical
// event says what failed, and the monitor shows a condition until the
// revert is taken.
func (m *Manager) owe(p *change, why string, err error) (versions.Version, error) {
	o := &owed{version: p.version, parent: p.parent, takers: p.takers, held: p.held, why: why,
		failed: err.Error(), since: time.Now(), attempts: 1}
	if v, serr := m.Store.Settle(p.version.Number, versions.Reverting, why+"; going back failed: "+err.Error()); serr == nil {
		o.version = v
	}
	m.setOwed(o)
	attempts, within := m.revertBounds()
	m.event(events.Critical, p.version.Number, "configuration version %d: going back to version %d failed: %v; the box tries again every %v, and reboots onto the version it boots on after %d attempts or %v (%s)",
		p.version.Number, p.version.Parent, err, m.tick(), attempts, within, why)
	return o.version, fmt.Errorf("going back to version %d: %w (the box tries again)", p.version.Parent, err)
}

// retry tries the owed revert once more (m.mu held), and reboots the box
// once the revert has failed too often or too long.
func (m *Manager) retry(ctx context.Context) {
	o := m.owed
	if !o.rebooting {
		if _, err := m.takeHeld(ctx, o.parent, o.takers, o.held); err == nil {
			m.setOwed(nil)
			m.clearSettled()
			why := fmt.Sprintf("%s; going back failed %d times (%s), then was taken", o.why, o.attempts, o.failed)
			m.Store.Settle(o.version.Number, versions.Reverted, why)
			m.event(events.Notice, o.version.Number, "configuration version %d reverted to version %d on attempt %d, %v after the first failed",
				o.version.Number, o.version.Parent, o.attempts+1, time.Since(o.since).Round(time.Millisecond))
			return
		} else {
			o.attempts++
			o.failed = err.Error()
		}
		attempts, within := m.revertBounds()
		if o.attempts < attempts && time.Since(o.since) < within {
			m.setOwed(o)
			return
		}
		if m.Reboot == nil {
			m.setOwed(o) // nothing but trying again is left
			return
		}
		o.rebooting = true
		o.reason = fmt.Sprintf("configuration version %d could not be reverted in place", o.version.Number)
		m.setOwed(o)
		m.event(events.Critical, o.version.Number, "configuration version %d: going back to version %d failed %d times in %v (last: %s): the box reboots onto the version it boots on",
			o.version.Number, o.version.Parent, o.attempts, time.Since(o.since).Round(time.Second), o.failed)
	}
	if err := m.rebootOnto(ctx, o.reason); err != nil {
		if o.failed != err.Error() {
			m.event(events.Critical, o.version.Number, "configuration version %d: going back to version %d: %v; trying again", o.version.Number, o.version.Parent, err)
		}
		o.failed = err.Error()
		m.setOwed(o)
		return
	}
	// The reboot is under way: asked once.
	m.setOwed(nil)
	m.Store.Settle(o.version.Number, versions.Reverted, o.why+"; the box reboots onto the version it boots on")
}

// rebootOnto reboots the box onto the version it boots on: never the
// trial of a change.
func (m *Manager) rebootOnto(ctx context.Context, reason string) error {
	if m.TrialConfig != "" {
		if err := durable.Remove(m.TrialConfig); err != nil {
			return fmt.Errorf("removing %s: %w", m.TrialConfig, err)
		}
	}
	if err := m.Reboot(ctx, reason); err != nil {
		return fmt.Errorf("rebooting: %w", err)
	}
	return nil
}

// setOwed makes o the revert the box owes (m.mu held), and publishes it
// as a condition.
func (m *Manager) setOwed(o *owed) {
	m.owed = o
	defer func() {
		if m.Tell != nil {
			m.Tell(m.Conditions())
		}
	}()
	if o == nil {
		m.cond.Store(nil)
		return
	}
	what := fmt.Sprintf("version %d", o.version.Number)
	if o.version.Number == 0 {
		what = "a change whose record does not read"
	}
	detail := fmt.Sprintf("configuration %s is being undone: going back to version %d failed (%s)", what, o.version.Parent, o.failed)
	if o.attempts > 1 {
		detail += fmt.Sprintf(", %d attempts", o.attempts)
	}
	if o.rebooting {
		detail += "; the box reboots onto the version it boots on"
	} else if m.Reboot != nil {
		attempts, within := m.revertBounds()
		detail += fmt.Sprintf("; tried every %v, the box reboots onto the version it boots on after %d attempts or %v", m.tick(), attempts, within)
	}
	m.cond.Store(&health.Condition{Kind: health.ConfigRevertOwed, Source: "statusd", Since: o.since.UTC(), Detail: detail})
}

// Conditions are the manager's conditions for the monitor: a revert the
// box owes. It takes no lock.
func (m *Manager) Conditions() []health.Condition {
	if c := m.cond.Load(); c != nil {
		return []health.Condition{*c}
	}
	return nil
}
