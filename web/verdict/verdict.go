// Package verdict decides whether a box still runs well after a change
// (an update, a new configuration): every configured daemon live, and
// every segment that forwarded before forwarding again. ncpos update
// holds a new build to it, and the box holds a configuration applied
// from afar to it.
package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
)

// SegmentState is what an update compares of a segment before and after:
// whether it forwards and, if not, the kinds of its conditions.
type SegmentState struct {
	Forwarding bool
	Kinds      []health.Kind
}

func (s SegmentState) String() string {
	if s.Forwarding {
		return "forwarding"
	}
	var k []string
	for _, kind := range s.Kinds {
		k = append(k, string(kind))
	}
	if len(k) == 0 {
		return "not reported"
	}
	return strings.Join(k, ", ")
}

// Baseline is every segment's state at one moment.
type Baseline map[string]SegmentState

// BaselineOf reads the segments of a status snapshot. A segment forwarderd
// does not report counts as not forwarding.
func BaselineOf(segs []api.Segment) Baseline {
	b := Baseline{}
	for _, s := range segs {
		st := SegmentState{}
		if f := s.Forwarding; f != nil {
			st.Forwarding = f.Healthy
			for _, c := range f.Conditions {
				if !slices.Contains(st.Kinds, c.Kind) {
					st.Kinds = append(st.Kinds, c.Kind)
				}
			}
			slices.Sort(st.Kinds)
		}
		b[s.Name] = st
	}
	return b
}

// Accept decides whether a new build may be kept: every configured daemon
// is live, and every segment that forwarded before the update forwards
// again, while one that did not is forwarding now or in the very same
// conditions as before. A cable that was out before the update is no
// reason to refuse it; a segment the new build broke is.
func Accept(before Baseline, daemons []api.Daemon, after Baseline) error {
	n := 0
	for _, d := range daemons {
		if !d.Configured {
			continue
		}
		n++
		if !d.Healthy {
			return fmt.Errorf("%s not live: %s", d.Name, d.Reason)
		}
	}
	if n == 0 {
		return fmt.Errorf("no daemons reported")
	}
	var bad []string
	names := make([]string, 0, len(before))
	for name := range before {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		was := before[name]
		now, ok := after[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("segment %s is gone (was %s)", name, was))
		case now.Forwarding:
		case was.Forwarding:
			bad = append(bad, fmt.Sprintf("segment %s forwarded before, now %s", name, now))
		case !slices.Equal(was.Kinds, now.Kinds):
			bad = append(bad, fmt.Sprintf("segment %s was %s, now %s", name, was, now))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}
