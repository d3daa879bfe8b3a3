package bypass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc/health"
)

// Verdict is one look at the forwarder: its typed health.Report, or why
// there is none.
type Verdict struct {
	// Err is why forwarderd gave no report (gone, hung, a bad answer);
	// "" when it answered.
	Err string
	// Report is what forwarderd answered.
	Report health.Report
}

// OK says whether the forwarder answered, is live and reports no
// condition at all.
func (v Verdict) OK() bool {
	return v.Err == "" && v.Report.Live.Live && len(v.Report.Conditions) == 0
}

// Summary is a line for bypassd's status.
func (v Verdict) Summary() string {
	switch {
	case v.Err != "":
		return v.Err
	case !v.Report.Live.Live:
		return "forwarderd not live: " + v.Report.Live.String()
	}
	var cs []string
	for _, c := range v.Report.Conditions {
		cs = append(cs, c.String())
	}
	return strings.Join(cs, "; ")
}

// For works out whether the forwarder serves segment seg. cutOff: the
// pair's relay is in bypass (or disconnect) and, by its capabilities, cuts
// the NIC ports off, so a link down is what the relay itself does rather
// than a fault; otherwise a forwarder could never show that it is ready
// behind a hardware relay in bypass. The decision reads the conditions'
// kinds only, never their wording.
func (v Verdict) For(seg string, cutOff bool) Health {
	switch {
	case seg == "":
		return Health{Reason: "the pair is not in any segment", Kinds: []health.Kind{health.NotForwarded}}
	case v.Err != "":
		return Health{Reason: v.Err, Kinds: []health.Kind{health.NoAnswer}}
	case !v.Report.Live.Live:
		h := Health{Reason: "forwarderd not live: " + v.Report.Live.String()}
		for _, p := range v.Report.Live.Problems {
			h.Kinds = append(h.Kinds, p.Kind)
		}
		return h
	}
	conds := v.Report.Segment(seg)
	if len(conds) == 0 {
		if !slices.Contains(v.Report.Segments, seg) {
			return Health{Reason: fmt.Sprintf("forwarderd does not forward segment %s", seg), Kinds: []health.Kind{health.NotForwarded}}
		}
		return Health{OK: true}
	}
	h := Health{}
	var reasons []string
	for _, c := range conds {
		h.Kinds = append(h.Kinds, c.Kind)
		reasons = append(reasons, c.String())
	}
	h.Reason = strings.Join(reasons, "; ")
	if cutOff && health.Only(conds, health.LinkDown) {
		return Health{OK: true, Reason: "links down while the relay cuts the ports off: " + h.Reason, Kinds: h.Kinds}
	}
	return h
}

// Prober looks at the forwarder's health.
type Prober interface {
	Probe(ctx context.Context) Verdict
}

// ForwarderProber asks forwarderd over its socket for its health.Report
// (GET /health) on every probe. A forwarderd that does not answer within
// Timeout (hung, stopped) serves no segment; one that is gone (killed) is
// refused at once. Datapath progress is forwarderd's own check (frames that
// enter a segment must leave it) and arrives as a tx_stalled condition.
type ForwarderProber struct {
	dir     string
	mu      sync.Mutex
	client  *forwarderapi.Client
	timeout time.Duration
}

// newForwarderProber probes the forwarderd socket in dir.
func newForwarderProber(dir string, timeout time.Duration) *ForwarderProber {
	return &ForwarderProber{dir: dir, client: forwarderapi.NewClient(dir, timeout), timeout: timeout}
}

// SetTimeout changes the probe's timeout (a new budget).
func (p *ForwarderProber) SetTimeout(timeout time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.client, p.timeout = forwarderapi.NewClient(p.dir, timeout), timeout
}

func (p *ForwarderProber) Probe(ctx context.Context) Verdict {
	p.mu.Lock()
	client, timeout := p.client, p.timeout
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := client.Health(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("forwarderd did not answer within %v", timeout.Round(time.Millisecond))
		}
		return Verdict{Err: err.Error()}
	}
	return Verdict{Report: r}
}
