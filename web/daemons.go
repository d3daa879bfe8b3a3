package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// Daemon states as the dashboard and the API show them. "healthy" means
// live: the daemon answers its /livez and says its loop and engine work;
// what it reports of the network or the box is in the conditions.
const (
	DaemonHealthy       = "healthy"
	DaemonUnhealthy     = "unhealthy"
	DaemonNotRunning    = "not running"
	DaemonNotConfigured = "not configured"
)

// KnownDaemons are the appliance daemons statusd reports on, whether the
// configuration starts them or not.
var KnownDaemons = []string{"forwarderd", "bypassd", "watchdogd", "statusd"}

// BypassState is one segment's bypass relay as the dashboard shows it,
// taken from bypassd's /status.
type BypassState struct {
	Segment  string    `json:"segment"`
	Pair     string    `json:"pair"`
	Backend  string    `json:"backend,omitempty"`
	State    string    `json:"state"`             // as read back: normal, bypass, disconnect or unknown
	Desired  string    `json:"desired,omitempty"` // what the policy wants
	Reason   string    `json:"reason"`            // bypassd's cause of the last change
	Since    time.Time `json:"since,omitzero"`
	Problem  string    `json:"problem,omitempty"`   // why bypassd cannot drive the relay
	HoldDown string    `json:"hold_down,omitempty"` // in force, with flap damping (a Go duration)
	Override *Override `json:"override,omitempty"`
}

// Override is a manual bypass override in force.
type Override struct {
	State   string    `json:"state"`
	Reason  string    `json:"reason"`
	By      string    `json:"by,omitempty"`
	Set     time.Time `json:"set,omitzero"`
	Expires time.Time `json:"expires,omitzero"` // zero: until ended
}

// bypassStatus is the part of bypassd's /status (bypass.Status in
// bypass/status.go) that statusd shows. A copy of the JSON shape, not an
// import, as for forwarderStatus.
type bypassStatus struct {
	Failsafe string `json:"failsafe"`
	Planned  *struct {
		Kind   string    `json:"kind"`
		Reason string    `json:"reason"`
		Since  time.Time `json:"since"`
	} `json:"planned"`
	Pairs []struct {
		Name     string    `json:"name"`
		Segment  string    `json:"segment"`
		Backend  string    `json:"backend"`
		Problem  string    `json:"problem"`
		State    string    `json:"state"`
		Desired  string    `json:"desired"`
		Cause    string    `json:"cause"`
		Since    time.Time `json:"since"`
		HoldDown string    `json:"hold_down"`
		Override *Override `json:"override"`
	} `json:"pairs"`
}

// pairOf finds the pair serving segment seg (by the pair's segment, else by
// the pair name the configuration gives).
func (b *bypassStatus) pairOf(seg, pair string) (*BypassState, bool) {
	for _, p := range b.Pairs {
		if (p.Segment != "" && p.Segment == seg) || (p.Segment == "" && p.Name == pair) {
			return &BypassState{Segment: seg, Pair: p.Name, Backend: p.Backend, State: p.State, Desired: p.Desired,
				Reason: p.Cause, Since: p.Since, Problem: p.Problem, HoldDown: p.HoldDown, Override: p.Override}, true
		}
	}
	return nil, false
}

// daemonStatus fetches a daemon's /status into v; notRunning tells a
// missing daemon from one that answered badly.
func daemonStatus(ctx context.Context, runDir, daemon string, v any) (notRunning bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err = ipc.NewClient(runDir, daemon, time.Second).Status(ctx, v)
	return err != nil && ipc.NotRunning(err), err
}

// SelfTest is the latest self-test (RFC 2544) report as the dashboard shows
// it. The self-test writes it to DefaultSelfTestFile; see API.md.
type SelfTest struct {
	Started  time.Time        `json:"started,omitzero"`
	Finished time.Time        `json:"finished"`
	Passed   bool             `json:"passed"`
	Summary  string           `json:"summary"`
	Results  []SelfTestResult `json:"results,omitempty"`
}

// SelfTestResult is one frame size of a self-test.
type SelfTestResult struct {
	Segment        string  `json:"segment,omitempty"`
	FrameSize      int     `json:"frame_size"`
	ThroughputPPS  float64 `json:"throughput_pps"`
	ThroughputMbps float64 `json:"throughput_mbps"`
	LossPercent    float64 `json:"loss_percent"`
	LatencyUS      float64 `json:"latency_us,omitempty"`
}

// DefaultSelfTestFile is where the latest self-test report is kept
// (/perm: it must survive a reboot, and it is written once per test run).
const DefaultSelfTestFile = "/perm/ncpos/selftest/latest.json"

// readSelfTest reads the latest report; nil, nil when there is none yet.
func readSelfTest(path string) (*SelfTest, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("self-test report: %w", err)
	}
	var st SelfTest
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("self-test report %s: %w", path, err)
	}
	return &st, nil
}
