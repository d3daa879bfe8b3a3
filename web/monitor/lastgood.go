package monitor

import (
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/api"
)

// LastGood keeps the boot's configuration as the last good one once the
// box has stayed live and forwarding for After: every configured daemon
// live and every segment forwarding, without a break. A configuration
// file on /perm that later fails to load is then replaced by it at boot,
// not by the image's.
type LastGood struct {
	After time.Duration
	// Keep writes the configuration; wrote is false when the file already
	// held it.
	Keep func() (wrote bool, err error)

	since time.Time
	done  bool
}

// observe runs under the monitor's stepMu.
func (m *Monitor) observeLastGood(now time.Time, snap *api.Snapshot) {
	l := m.LastGood
	if l == nil || l.done || l.Keep == nil {
		return
	}
	good := len(snap.Segments) > 0
	for _, d := range snap.System.Daemons {
		if d.Configured && !d.Healthy {
			good = false
		}
	}
	for _, s := range snap.Segments {
		if s.Forwarding == nil || !s.Forwarding.Healthy {
			good = false
		}
	}
	if !good {
		l.since = time.Time{}
		return
	}
	if l.since.IsZero() {
		l.since = now
	}
	if now.Sub(l.since) < l.After {
		return
	}
	l.done = true
	wrote, err := l.Keep()
	switch {
	case err != nil:
		m.event(events.Warning, events.KindConfig, []string{"action", "keep_last_good"}, "could not keep the configuration as the last good one: %v", err)
	case wrote:
		m.event(events.Notice, events.KindConfig, []string{"action", "keep_last_good"}, "configuration kept as the last good one: live and forwarding for %v", l.After)
	}
}
