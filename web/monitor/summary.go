package monitor

import (
	"fmt"
	"strings"

	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/web/api"
)

// summarize works out the headline: bypass wins over degraded, because a
// segment that does not forward is what the engineer must act on.
func summarize(s *api.Snapshot, rec *sysinfo.InitRecord) api.Summary {
	var sum api.Summary
	bypass := false
	for _, seg := range s.Segments {
		if seg.Bypass != nil && seg.Bypass.Problem != "" {
			sum.Problems = append(sum.Problems, fmt.Sprintf("segment %s: relay %s cannot be driven: %s", seg.Name, seg.Bypass.Pair, seg.Bypass.Problem))
		}
		if seg.Bypass != nil && seg.Bypass.State != "normal" {
			bypass = true
			p := fmt.Sprintf("segment %s %s", seg.Name, stateText(seg.Bypass.State))
			if seg.Bypass.Reason != "" {
				p += ": " + seg.Bypass.Reason
			}
			sum.Problems = append(sum.Problems, p)
		}
		if f := seg.Forwarding; f != nil && !f.Healthy {
			sum.Problems = append(sum.Problems, fmt.Sprintf("segment %s: %s", seg.Name, f.Problem))
		}
	}
	sum.Problems = append(sum.Problems, s.Bypass...)
	for _, p := range s.Ports {
		if p.Role != "unused" && !p.Up {
			sum.Problems = append(sum.Problems, fmt.Sprintf("port %s link %s", p.Name, p.Link))
		}
	}
	for _, d := range s.System.Daemons {
		if d.Configured && !d.Healthy {
			sum.Problems = append(sum.Problems, fmt.Sprintf("%s %s", d.Name, d.State))
		}
	}
	if p := s.System.Watchdog.Petter; p != nil && !p.Petting {
		sum.Problems = append(sum.Problems, "watchdog not petted: "+p.StoppedReason)
	}
	for _, r := range rec.Config.Rejected {
		sum.Problems = append(sum.Problems, "configuration rejected: "+firstLine(r))
	}
	// Box conditions the lines above do not already cover.
	for _, c := range s.Conditions {
		switch c.Kind {
		case health.PermDegraded, health.ProfileIncomplete, health.ClockNotSet, health.ClockNotSynced, health.NameUnresolved, health.ConfigRevertOwed:
			sum.Problems = append(sum.Problems, c.String())
		}
	}
	switch {
	case bypass:
		sum.State = "bypass"
	case len(sum.Problems) > 0:
		sum.State = "degraded"
	default:
		sum.State = "ok"
	}
	return sum
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
