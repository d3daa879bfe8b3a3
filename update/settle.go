package update

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

// DefaultBootSettle is how long after its boot a box is taken to be still
// bringing its segments up: links negotiating, relays held in bypass for
// their hold-down (a relay that cuts the links shows them down
// meanwhile). It is the watchdog's default boot grace, the box's own
// notion of "just booted".
const DefaultBootSettle = 2 * time.Minute

// settling lists the segments an update waits for on a box that has been
// up for uptime: while the box is younger than settle, those that do not
// forward yet (see notForwarding); and how much longer the box may take
// to settle.
func settling(segs []api.Segment, uptime, settle time.Duration) (waiting []string, left time.Duration) {
	if uptime >= settle {
		return nil, 0
	}
	if waiting = notForwarding(segs); len(waiting) == 0 {
		return nil, 0
	}
	return waiting, settle - uptime
}

// notForwarding lists the segments that neither forward nor are held by
// an override (an operator's bypass is meant to last).
func notForwarding(segs []api.Segment) []string {
	var out []string
	for _, s := range segs {
		if s.Forwarding != nil && s.Forwarding.Healthy {
			continue
		}
		if s.Bypass != nil && s.Bypass.Override != nil {
			continue
		}
		out = append(out, s.Name)
	}
	return out
}

// settledSegments waits, on a box that booted at booted, less than settle
// ago, for segments that do not forward yet to forward, until the box has
// been up for settle: an update's baseline must be what the segments do,
// not what they do while the box is still starting (the new build would
// be held to a weaker "as before"). It returns the segments as they are
// then; a segment still not forwarding is taken as it is.
func (c *Client) settledSegments(ctx context.Context, segs []api.Segment, booted time.Time, settle time.Duration, logf func(string, ...any)) ([]api.Segment, error) {
	clk := c.clock()
	waiting, left := settling(segs, clk.Now().Sub(booted), settle)
	if len(waiting) == 0 {
		return segs, nil
	}
	logf("the appliance booted %v ago: waiting up to %v for %s to forward before taking the segments as the update's baseline",
		clk.Now().Sub(booted).Round(time.Second), left.Round(time.Second), segmentNames(waiting))
	settled := booted.Add(settle)
	for failed := 0; ; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-clk.After(time.Second):
		}
		// A box busy with its start may miss a request: three in a row
		// end the update, before it has changed anything.
		now, err := c.Segments(ctx)
		if err != nil {
			if failed++; failed == 3 {
				return nil, fmt.Errorf("reading the segments while the appliance settles (%d tries): %w", failed, err)
			}
			continue
		}
		failed, segs = 0, now
		waiting = notForwarding(segs)
		if len(waiting) == 0 {
			return segs, nil
		}
		if clk.Now().After(settled) {
			logf("%s not forwarding %v after the appliance's boot: the new build is held to the state it is in", segmentNames(waiting), settle)
			return segs, nil
		}
	}
}

// segmentNames names one segment or several: "segment seg1", "segments
// seg1, seg2".
func segmentNames(names []string) string {
	if len(names) == 1 {
		return "segment " + names[0]
	}
	return "segments " + strings.Join(names, ", ")
}
