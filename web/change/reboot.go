package change

import (
	"context"
	"fmt"
	"time"

	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/durable"
)

// rebootInto has the box take res.Version, whose text is text, by a
// reboot (m.mu held): for good when it is confirmed at once, else once,
// as its trial (TrialConfig), waiting for its confirmation until due
// when the box is up again. parent is the text in force.
func (m *Manager) rebootInto(ctx context.Context, res Applied, text, parent []byte, due time.Time, what string) (Applied, error) {
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
		m.setPending(&change{version: v, due: due, parent: parent, reboot: true})
		m.event(events.Notice, v.Number, "%s; the box reboots to take it, and reboots back unless it is confirmed by %s", what, v.Deadline.Format(time.RFC3339))
	}
	if err := m.Reboot(ctx, fmt.Sprintf("configuration version %d", v.Number)); err != nil {
		m.pending = nil
		m.clearSettled()
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

// rebootBack undoes a change taken by a reboot: the box boots on the
// version before, which PermConfig still holds. A reboot that fails is
// owed, and asked again every tick.
func (m *Manager) rebootBack(ctx context.Context, p *change, why string) (versions.Version, error) {
	n := p.version.Number
	reason := fmt.Sprintf("configuration version %d reverted", n)
	// Reverting until the reboot is under way: should statusd stop
	// before it records more, the box settles it as it starts again.
	v, serr := m.Store.Settle(n, versions.Reverting, why)
	if serr != nil {
		v = p.version
	}
	m.event(events.Warning, n, "configuration version %d reverted to version %d: %s; the box reboots to go back", n, p.version.Parent, why)
	if err := m.rebootOnto(ctx, reason); err != nil {
		m.setOwed(&owed{version: v, parent: p.parent, why: why, failed: err.Error(), since: time.Now(), attempts: 1, rebooting: true, reason: reason})
		m.event(events.Critical, n, "configuration version %d: going back to version %d by a reboot: %v; trying again every %v", n, p.version.Parent, err, m.tick())
		return v, fmt.Errorf("going back to version %d by a reboot: %w", p.version.Parent, err)
	}
	if rv, err := m.Store.Settle(n, versions.Reverted, why); err == nil {
		v = rv
	}
	return v, serr
}
