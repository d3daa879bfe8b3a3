package bypass

import (
	"fmt"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// Settings are what bypassd takes from a configuration in place: which
// segment each pair follows, the budget and the policy. The pairs
// themselves are the platform profile's, which only a boot changes.
type Settings struct {
	Config *config.Config
	Budget time.Duration
	Policy Policy
}

// pairRole is which segment the profile's pair named name, between
// ports, follows in cfg, and whether it joins the self-test's test
// ports instead (kept on their cables).
func pairRole(cfg *config.Config, name string, ports []string) (segment string, testPorts bool) {
	for _, s := range cfg.Segments {
		if s.Bypass == name {
			segment = s.Name
		}
	}
	testPorts = segment == "" && len(ports) == 2 && cfg.SelfTest.IsTestPort(ports[0]) && cfg.SelfTest.IsTestPort(ports[1])
	return segment, testPorts
}

// Reconfigure takes new settings without a restart. A pair whose segment
// changes follows the new one from the next look at the forwarder: it
// starts anew in bypass and returns to normal once the new segment has
// forwarded for the hold-down (a pair left without a segment stays in
// bypass). Pairs whose segment is the same keep their state.
func (s *Supervisor) Reconfigure(set Settings) (bypassapi.Reconfigured, error) {
	if set.Budget < 6*time.Millisecond {
		return bypassapi.Reconfigured{}, fmt.Errorf("budget %v is too short, want at least 6ms", set.Budget)
	}
	policy := set.Policy.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	r := bypassapi.Reconfigured{Segments: map[string]bypassapi.SegmentChange{}}
	for _, p := range s.pairs {
		seg, test := pairRole(set.Config, p.Name, p.Ports[:])
		if seg == p.Segment && test == p.TestPorts {
			continue
		}
		r.Segments[p.Name] = bypassapi.SegmentChange{From: p.Segment, To: seg}
		s.logf(bypassapi.Entry{Pair: p.Name, Kind: "reconfigure", Cause: fmt.Sprintf("follows segment %q, was %q", seg, p.Segment)})
		p.Segment, p.TestPorts = seg, test
		if p.dec != nil {
			// The new segment proves itself for the full hold-down
			// before the relay leaves bypass; an override or a planned
			// stop stays.
			d := newDecider(policy, now, false)
			d.starting = false
			d.override, d.planned, d.failsafe = p.dec.override, p.dec.planned, p.dec.failsafe
			p.dec = d
		}
	}
	if policy != s.opts.Policy {
		r.Policy = true
		s.opts.Policy = policy
		for _, p := range s.pairs {
			if p.dec != nil {
				p.dec.p = policy
			}
		}
	}
	if set.Budget != s.opts.Budget {
		r.Budget = true
		s.opts.Budget = set.Budget
		if t, ok := s.opts.Prober.(interface{ SetTimeout(time.Duration) }); ok {
			t.SetTimeout(s.opts.ProbeTimeout())
		}
	}
	s.reconcile(now)
	return r, nil
}
