package change

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/verdict"
)

// resume picks up, as statusd starts, the versions the store holds as
// pending or reverting: a change the box still runs is watched again
// (or its revert tried again), one it no longer runs is settled. The box
// never runs a change unwatched: one in force whose record does not
// read is undone.
func (m *Manager) resume(ctx context.Context) {
	// Under the lock from the start: a change applied meanwhile is
	// pending in the store and in force.
	m.mu.Lock()
	defer m.mu.Unlock()
	text, err := os.ReadFile(m.RunConfig)
	if err != nil {
		m.event(events.Error, 0, "reading the configuration in force as statusd starts: %v", err)
		return
	}
	var settled []byte
	if m.SettledFile != "" {
		if settled, err = os.ReadFile(m.SettledFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.event(events.Error, 0, "reading %s: %v", m.SettledFile, err)
		}
	}
	all, listErr := m.Store.List()
	for _, v := range all {
		if m.pending != nil && m.pending.version.Number == v.Number || m.owed != nil && m.owed.version.Number == v.Number {
			continue // applied or undone meanwhile: this manager's own
		}
		switch v.State {
		case versions.Pending:
			m.resumePending(v, text, settled)
		case versions.Reverting:
			m.resumeReverting(v, text, settled)
		}
	}
	if m.pending == nil && m.owed == nil {
		m.unwatched(ctx, text, settled, listErr)
	}
	// A change picked up is held to the segments that forward now: the
	// boot window lets those that start meanwhile come up.
	if p := m.pending; p != nil {
		if next, err := config.Parse("pending version", text); err == nil {
			if before, err := m.baseline(ctx, next); err == nil {
				p.before = before
			}
		}
	}
}

// resumePending settles or adopts pending version v, the box running
// text, with settled the text a change in place replaced (nil: none).
func (m *Manager) resumePending(v versions.Version, text, settled []byte) {
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
		return
	}
	if kept, err := os.ReadFile(m.PermConfig); runs && err == nil && versions.Sum(kept) == v.SHA256 {
		// Confirmed, and cut off before the record said so.
		m.Store.Settle(v.Number, versions.Confirmed, "confirmed; the box restarted before it recorded that")
		return
	}
	if !runs || m.pending != nil {
		m.Store.Settle(v.Number, versions.Reverted, "the box restarted before it was confirmed and booted on the version before")
		m.event(events.Warning, v.Number, "configuration version %d was not confirmed before the box restarted: reverted", v.Number)
		return
	}
	var parent []byte
	if _, t, err := m.Store.Get(v.Parent); err == nil {
		parent = t
	} else if !v.Reboot {
		parent = settled
	}
	if parent == nil {
		if m.keep(v.Number, text) == nil {
			m.Store.Settle(v.Number, versions.Confirmed, "kept: the version it replaced is no longer readable")
		}
		return
	}
	p := &change{version: v, due: m.resumedDeadline(&v), parent: parent, takers: takerOrder, before: verdict.Baseline{},
		reboot: v.Reboot, booting: time.Now()}
	if !v.Reboot {
		p.held = heldBack(text, parent)
		m.markSettled(parent)
	}
	m.setPending(p)
}

// resumedDeadline is when pending version v, picked up again, reverts by
// itself, on the monotonic clock: its deadline, but never further away
// than the confirm window it was applied with, nor MaxConfirmWithin,
// whatever the wall clock did meanwhile. A deadline it moves is
// recorded.
func (m *Manager) resumedDeadline(v *versions.Version) time.Time {
	now := time.Now()
	left := v.Deadline.Sub(now)
	bound := min(max(v.Deadline.Sub(v.Time), 0), MaxConfirmWithin)
	if left > bound {
		left = bound
		if moved, err := m.Store.Redeadline(v.Number, now.Add(left)); err == nil {
			*v = moved
		}
		m.event(events.Warning, v.Number, "configuration version %d: its deadline was further away than the window it was applied with (the clock moved): it reverts by %s",
			v.Number, v.Deadline.Format(time.RFC3339))
	}
	return now.Add(max(left, 0))
}

// resumeReverting picks up version v, which the box was going back from
// as statusd stopped: in the same boot (settled is there) going back is
// tried again; after a reboot the box booted on the version before.
func (m *Manager) resumeReverting(v versions.Version, text, settled []byte) {
	runs := v.SHA256 == versions.Sum(text)
	switch {
	case settled != nil && !v.Reboot:
		o := &owed{version: v, parent: settled, takers: takerOrder, held: heldBack(text, settled), why: v.Reason,
			failed: "statusd started again before every daemon took the version before", since: time.Now()}
		m.parent.Store(&o.parent)
		m.setOwed(o)
		m.event(events.Critical, v.Number, "configuration version %d was being reverted as statusd started: going back to version %d again", v.Number, v.Parent)
	case v.Reboot && runs:
		reason := fmt.Sprintf("configuration version %d reverted", v.Number)
		m.setOwed(&owed{version: v, why: v.Reason, failed: "statusd started again before the reboot back was under way", since: time.Now(),
			rebooting: true, reason: reason})
		m.event(events.Critical, v.Number, "configuration version %d was being reverted by a reboot as statusd started: rebooting again", v.Number)
	default:
		m.Store.Settle(v.Number, versions.Reverted, v.Reason+"; the box restarted and booted on the version before")
	}
}

// unwatched refuses to run a change nobody watches (m.mu held): the box
// runs text, a change in place replaced settled (nil: none), and no
// record of a pending change says which (listErr: why some records do
// not read). It goes back to settled in place; a trial boot whose record
// does not read reboots onto the version the box boots on.
func (m *Manager) unwatched(ctx context.Context, text, settled []byte, listErr error) {
	why := "no record of it"
	if listErr != nil {
		why = "its record does not read: " + listErr.Error()
	}
	if settled != nil {
		kept, _ := os.ReadFile(m.PermConfig)
		if versions.Sum(settled) == versions.Sum(text) || versions.Sum(kept) == versions.Sum(text) || m.versionOf(text).State == versions.Confirmed {
			m.clearSettled() // nothing, or a confirmed version, runs
			return
		}
		m.markSettled(settled)
		p := &change{version: m.versionOf(text), parent: settled, takers: takerOrder, held: heldBack(text, settled)}
		m.event(events.Warning, p.version.Number, "the configuration in force is an unconfirmed change (%s): going back to the configuration before it", why)
		m.revert(ctx, p, "an unconfirmed change the box would run unwatched: "+why)
		return
	}
	if m.TrialConfig == "" || !strings.HasPrefix(m.Source, m.TrialConfig) {
		return
	}
	if kept, err := os.ReadFile(m.PermConfig); err == nil && versions.Sum(kept) == versions.Sum(text) {
		return // confirmed
	}
	v := m.versionOf(text)
	if v.State == versions.Confirmed {
		return
	}
	reason := "a trial configuration the box would run unwatched"
	m.setOwed(&owed{version: v, why: reason + ": " + why, failed: why, since: time.Now(), rebooting: true, reason: reason})
	m.event(events.Critical, v.Number, "the box booted on a trial configuration whose change is not watched (%s): rebooting onto the version it boots on", why)
}

// versionOf is the record of the version whose text is text, as far as
// the store can tell: number 0 when none reads.
func (m *Manager) versionOf(text []byte) versions.Version {
	all, _ := m.Store.List()
	for _, v := range all {
		if v.SHA256 == versions.Sum(text) {
			return v
		}
	}
	return versions.Version{SHA256: versions.Sum(text)}
}

// heldBack are the segments going back from text to parent re-attaches.
func heldBack(text, parent []byte) []string {
	cur, err := config.Parse("configuration in force", text)
	if err != nil {
		return nil
	}
	prev, err := config.Parse("configuration before", parent)
	if err != nil {
		return nil
	}
	return reattached(cur, config.Plan(cur, prev))
}
