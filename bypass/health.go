package bypass

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// Verdict is one look at the forwarder's health.
type Verdict struct {
	// Err is "" when forwarderd says it is healthy; otherwise why not (its
	// 503 reason, or the error reaching it).
	Err string
	// Global are problems that concern the whole forwarder (heartbeat,
	// datapath); with any, every pair is unhealthy.
	Global []string
	// Segments has forwarderd's verdict per segment when it could be
	// asked; nil when forwarderd did not answer at all (dead or hung).
	Segments map[string]SegmentVerdict
}

// SegmentVerdict is forwarderd's verdict on one segment.
type SegmentVerdict struct {
	OK      bool
	Problem string
	// LinksOnly: every problem is a port's link being down, which is
	// what a hardware relay in bypass does to the NIC ports.
	LinksOnly bool
}

// For works out whether the forwarder serves segment seg. bypassed: the
// pair's relay is in bypass (or disconnect) and, by its capabilities, cuts
// the NIC ports off, so links down are expected rather than a fault —
// otherwise a forwarder could never become healthy behind a hardware
// relay in bypass.
func (v Verdict) For(seg string, bypassed bool) Health {
	switch {
	case seg == "":
		return Health{Reason: "the pair is not in any segment"}
	case v.Err == "":
		return Health{OK: true}
	case v.Segments == nil:
		return Health{Reason: v.Err}
	case len(v.Global) > 0:
		return Health{Reason: strings.Join(v.Global, "; ")}
	}
	sv, ok := v.Segments[seg]
	switch {
	case !ok:
		return Health{Reason: fmt.Sprintf("forwarderd does not forward segment %s", seg)}
	case sv.OK:
		return Health{OK: true}
	case sv.LinksOnly && bypassed:
		return Health{OK: true, Reason: "links down while the relay bypasses the ports"}
	}
	return Health{Reason: sv.Problem}
}

// Prober looks at the forwarder's health.
type Prober interface {
	Probe(ctx context.Context) Verdict
}

// ForwarderProber asks forwarderd over its socket: /healthz on every
// probe, and /status only when /healthz says 503, to tell which segments
// are affected. A forwarderd that does not answer within Timeout (hung,
// stopped) is unhealthy; one that is gone (killed) is refused at once.
// Datapath progress is forwarderd's own check (frames that enter a
// segment must leave it) and arrives through /healthz.
type ForwarderProber struct {
	client  *ipc.Client
	Timeout time.Duration
}

// NewForwarderProber probes the forwarderd socket in dir.
func NewForwarderProber(dir string, timeout time.Duration) *ForwarderProber {
	return &ForwarderProber{client: ipc.NewClient(dir, "forwarderd", timeout), Timeout: timeout}
}

// forwarderStatus is the part of forwarderd's /status bypassd reads.
type forwarderStatus struct {
	Healthy  bool     `json:"healthy"`
	Problems []string `json:"problems"`
	Segments []struct {
		Name    string `json:"name"`
		Healthy bool   `json:"healthy"`
		Problem string `json:"problem"`
	} `json:"segments"`
}

func (p *ForwarderProber) Probe(ctx context.Context) Verdict {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	err := p.client.Health(ctx)
	if err == nil {
		return Verdict{}
	}
	v := Verdict{Err: err.Error()}
	var ue *url.Error
	if errors.As(err, &ue) {
		return v // not answering: no segment is served
	}
	var st forwarderStatus
	if err := p.client.Status(ctx, &st); err != nil {
		return v
	}
	return verdictFromStatus(v.Err, st)
}

// verdictFromStatus splits forwarderd's problems into global ones and the
// segments'.
func verdictFromStatus(reason string, st forwarderStatus) Verdict {
	v := Verdict{Err: reason, Segments: map[string]SegmentVerdict{}}
	var segProblems []string
	for _, s := range st.Segments {
		sv := SegmentVerdict{OK: s.Healthy, Problem: s.Problem}
		if !s.Healthy && s.Problem != "" {
			sv.LinksOnly = true
			for _, part := range strings.Split(s.Problem, "; ") {
				segProblems = append(segProblems, part)
				if !strings.HasPrefix(part, "port ") || !strings.Contains(part, " link ") {
					sv.LinksOnly = false
				}
			}
		}
		v.Segments[s.Name] = sv
	}
	for _, p := range st.Problems {
		mine := false
		for _, sp := range segProblems {
			if p == sp {
				mine = true
				break
			}
		}
		if !mine {
			v.Global = append(v.Global, p)
		}
	}
	if v.Err == "" && !st.Healthy {
		v.Err = "forwarderd unhealthy"
	}
	return v
}
