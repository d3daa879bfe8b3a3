// Package api holds the JSON types of statusd's API (web/API.md) that
// other programs read: the host's update and fleet tools and the QEMU
// tests decode them, the appliance's statusd (package web) serves them.
// It links no server code.
package api

import (
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
)

// Summary is the one-word answer a remote engineer wants first.
type Summary struct {
	State    string   `json:"state"` // "ok", "bypass" (a segment is not forwarding) or "degraded"
	Problems []string `json:"problems,omitempty"`
}

// Interface is one network interface as the status page shows it.
type Interface struct {
	Name      string   `json:"name"`
	Port      string   `json:"port,omitempty"` // front-panel name
	MAC       string   `json:"mac"`
	OperState string   `json:"oper_state"`
	Addresses []string `json:"addresses"`
}

// Daemon is one ncpos daemon's health.
type Daemon struct {
	Name       string `json:"name"`
	Configured bool   `json:"configured"` // init starts it (init's record)
	State      string `json:"state"`      // healthy, unhealthy, not running, not configured
	Healthy    bool   `json:"healthy"`
	Reason     string `json:"reason,omitempty"`
}

// WatchdogInfo tells who holds the hardware watchdog and how it is petted.
type WatchdogInfo struct {
	Holders       []Holder `json:"holders"`
	ClaimedByInit bool     `json:"claimed_by_init"`
	GokrazyPinger string   `json:"gokrazy_pinger"`
	Petter        *Petter  `json:"petter,omitempty"` // from watchdogd
	Error         string   `json:"error,omitempty"`
}

// System is the snapshot behind the status page and /api/v1/system.
type System struct {
	BuildID        string       `json:"build_id"`
	MachineID      string       `json:"machine_id"`
	Hostname       string       `json:"hostname"`
	Kernel         string       `json:"kernel"`
	Cmdline        string       `json:"cmdline"`
	UptimeSeconds  float64      `json:"uptime_seconds"`
	Root           Mount        `json:"root"`
	Perm           *Mount       `json:"perm,omitempty"`
	Mounts         []Mount      `json:"mounts"`
	BootDisk       *DiskWrites  `json:"boot_disk,omitempty"`
	Interfaces     []Interface  `json:"interfaces"`
	ManagementPort string       `json:"management_port"`
	ConfigSource   string       `json:"config_source"`
	ConfigRejected []string     `json:"config_rejected,omitempty"`
	Daemons        []Daemon     `json:"daemons"`
	Watchdog       WatchdogInfo `json:"watchdog"`
	Time           *TimeSync    `json:"time,omitempty"` // nil where statusd keeps no clock (a test's tree)
	Errors         []string     `json:"errors,omitempty"`
}

// TimeSync is the box's clock as its NTP client keeps it.
type TimeSync struct {
	Servers []string `json:"servers"` // asked each round, in order
	Synced  bool     `json:"synced"`  // a server answered well within the last few rounds
	Server  string   `json:"server,omitempty"`
	Stratum int      `json:"stratum,omitempty"`
	// OffsetSeconds is the clock's offset from the server (server minus
	// box) measured at the last sync, before it was corrected.
	OffsetSeconds float64 `json:"offset_seconds"`
	// RootDistanceSeconds bounds the error of that server's time.
	RootDistanceSeconds float64   `json:"root_distance_seconds,omitempty"`
	LastSync            time.Time `json:"last_sync,omitzero"`
	// FirstSync is when this run first synced; StepSeconds the step it
	// made then, 0 when the clock was close enough to slew.
	FirstSync   time.Time `json:"first_sync,omitzero"`
	StepSeconds float64   `json:"step_seconds,omitempty"`
	// Error says why the last round synced with no server.
	Error string `json:"error,omitempty"`
}

// Segment is one segment: configuration, forwarding and bypass state.
type Segment struct {
	Name            string             `json:"name"`
	Ports           []string           `json:"ports"`
	Mode            string             `json:"mode"`
	Engine          string             `json:"engine"`
	Cores           []int              `json:"cores"`            // forwarding CPUs (forwarderd); empty when unknown
	CoresConfigured int                `json:"cores_configured"` // forwarder.cores, 0 = all but one
	BypassPair      string             `json:"bypass_pair,omitempty"`
	Bypass          *BypassState       `json:"bypass"` // nil when unknown, see BypassNote
	BypassNote      string             `json:"bypass_note,omitempty"`
	Forwarding      *SegmentForwarding `json:"forwarding"` // nil when forwarderd does not report, see ForwarderNote
	ForwarderNote   string             `json:"forwarder_note,omitempty"`
}

// SegmentForwarding is what forwarderd says about a segment.
type SegmentForwarding struct {
	Healthy    bool               `json:"healthy"`           // no condition: the segment forwards
	Problem    string             `json:"problem,omitempty"` // the conditions in words
	Conditions []health.Condition `json:"conditions"`
	Packets    uint64             `json:"packets"`   // entered, both directions
	Forwarded  uint64             `json:"forwarded"` // left, both directions
	Drops      uint64             `json:"drops"`
	Malformed  uint64             `json:"malformed"`
}

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
	HoldDown string    `json:"hold_down,omitempty"` // in force: the start hold-down until the first normal, then the hold-down with flap damping (a Go duration)
	Override *Override `json:"override,omitempty"`
}

// SelfTest is the latest self-test (RFC 2544) report as the dashboard shows
// it. The self-test writes it to SelfTestFile; see API.md.
type SelfTest struct {
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished"`
	Passed   bool      `json:"passed"`
	// Verdict is the whole test's: VerdictPassed when every result
	// passed, VerdictInconclusive when none failed but some could not be
	// offered at the expected rate (the tester's limit, not the box's),
	// VerdictFailed otherwise (a result below what is expected, or a run
	// that did not finish). Empty in reports of older builds.
	Verdict string           `json:"verdict,omitempty"`
	Summary string           `json:"summary"`
	Results []SelfTestResult `json:"results,omitempty"`
}

// SelfTestResult is one frame size of a self-test.
type SelfTestResult struct {
	Segment        string  `json:"segment,omitempty"`
	Direction      string  `json:"direction,omitempty"` // "LAN1 → LAN2": the segment ports crossed
	FrameSize      int     `json:"frame_size"`
	ThroughputPPS  float64 `json:"throughput_pps"`
	ThroughputMbps float64 `json:"throughput_mbps"`
	LossPercent    float64 `json:"loss_percent"`
	LatencyUS      float64 `json:"latency_us,omitempty"` // mean over every frame timed
	// LatencyRFC2544US is the latency RFC 2544 §26.2 reports: the average
	// over LatencyTrials trials at the throughput rate of each trial's
	// latency; min, p99 and max are over every frame of those trials.
	LatencyRFC2544US float64 `json:"latency_rfc2544_us,omitempty"`
	LatencyTrials    int     `json:"latency_trials,omitempty"`
	LatencyMinUS     float64 `json:"latency_min_us,omitempty"`
	LatencyP99US     float64 `json:"latency_p99_us,omitempty"`
	LatencyMaxUS     float64 `json:"latency_max_us,omitempty"`
	// ExpectedPPS is what the configuration asks of this size
	// (selftest.expect), Expected says it as configured.
	ExpectedPPS float64 `json:"expected_pps,omitempty"`
	Expected    string  `json:"expected,omitempty"`
	// Verdict is VerdictPassed when the throughput reached ExpectedPPS,
	// VerdictFailed when it did not, VerdictInconclusive when the test
	// ports could not offer the expected rate (Note says why).
	Verdict string `json:"verdict,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Verdicts of one self-test result.
const (
	VerdictPassed       = "PASSED"
	VerdictFailed       = "FAILED"
	VerdictInconclusive = "INCONCLUSIVE"
)

// SelfTestFile is where the latest self-test report is kept
// (/perm: it must survive a reboot, and it is written once per test run).
const SelfTestFile = "/perm/ncpos/selftest/latest.json"

// KernelRelease is the release from Kernel, /proc/version's "Linux
// version X …"; Kernel whole when it reads otherwise.
func (s *System) KernelRelease() string {
	f := strings.Fields(s.Kernel)
	if len(f) >= 3 && f[0] == "Linux" && f[1] == "version" {
		return f[2]
	}
	return s.Kernel
}

// Mount is a mounted file system, as /proc/mounts lists it.
type Mount struct {
	Device     string `json:"device"`
	MountPoint string `json:"mount_point"`
	FSType     string `json:"fs_type"`
	Options    string `json:"options"`
}

// ReadOnly says whether the mount has the ro option.
func (m Mount) ReadOnly() bool {
	return slices.Contains(strings.Split(m.Options, ","), "ro")
}

// DiskWrites counts what was written to a disk since boot
// (/proc/diskstats).
type DiskWrites struct {
	Disk         string `json:"disk"`
	Writes       uint64 `json:"writes"`        // completed write requests
	BytesWritten uint64 `json:"bytes_written"` // sectors written × 512
}
