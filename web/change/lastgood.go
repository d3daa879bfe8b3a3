package change

import (
	"context"
	"fmt"
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
	// Keep writes the configuration the box settled on (Manager.Settled);
	// wrote is false when the file already held it.
	Keep   func() (wrote bool, err error)
	Events *events.Log

	since time.Time
	done  bool
}

// Run looks at the snapshot the monitor publishes (nil until its first)
// every interval until ctx ends or the configuration is kept.
func (l *LastGood) Run(ctx context.Context, published func() *api.Snapshot, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !l.done {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if snap := published(); snap != nil {
				l.observe(now, snap)
			}
		}
	}
}

// observe judges one snapshot, taken at now.
func (l *LastGood) observe(now time.Time, snap *api.Snapshot) {
	if l.done || l.Keep == nil {
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
		l.Events.Note(events.Warning, events.KindConfig, []string{"action", "keep_last_good"}, fmt.Sprintf("could not keep the configuration as the last good one: %v", err))
	case wrote:
		l.Events.Note(events.Notice, events.KindConfig, []string{"action", "keep_last_good"}, fmt.Sprintf("configuration kept as the last good one: live and forwarding for %v", l.After))
	}
}
