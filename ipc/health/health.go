// Package health is the typed contract the appliance's daemons use to say
// how they and the network are doing. It separates three kinds of signal,
// because they call for different actions:
//
//   - Liveness: the daemon answers, its main loop runs, its engine works.
//     Only liveness (and resources a reboot gives back: memory, file
//     descriptors) gates the hardware watchdog, since a reset fixes a hung
//     box and nothing else.
//   - Segment conditions: a port's link is down, a port is absent, frames
//     enter and none leave, a relay is in bypass or cannot be driven. They
//     drive the bypass policy, the dashboard, events and metrics, never the
//     watchdog: a reboot mends no cable.
//   - Box conditions: a rejected configuration, a degraded /perm, an
//     incomplete profile. Events, metrics and a "degraded" summary; never
//     the watchdog.
//
// Every decision reads a Kind; Detail is text for people and no code looks
// into it. Each daemon serves its Report on its socket (GET /health) and
// its Liveness alone on GET /livez (200 live, 503 not), see package ipc.
package health

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Kind names what a problem or condition is.
type Kind string

// Class is what a kind of signal may drive.
type Class int

const (
	// ClassLiveness kinds make a daemon not live: they gate the watchdog.
	ClassLiveness Class = iota
	// ClassSegment kinds concern one segment (or a port or pair of it).
	ClassSegment
	// ClassBox kinds concern the box as a whole but not its liveness.
	ClassBox
)

func (c Class) String() string {
	switch c {
	case ClassLiveness:
		return "liveness"
	case ClassSegment:
		return "segment"
	case ClassBox:
		return "box"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Liveness problems: the daemon is hung or its engine has failed.
const (
	// HeartbeatStale: the daemon's main loop has not run for too long.
	HeartbeatStale Kind = "heartbeat_stale"
	// EngineFailed: the datapath (an AF_XDP worker, the BPF maps) failed.
	EngineFailed Kind = "engine_failed"
	// ProgramDetached: an XDP program the daemon attached is gone.
	ProgramDetached Kind = "program_detached"
	// CountersUnreadable: the datapath's maps cannot be read.
	CountersUnreadable Kind = "counters_unreadable"
	// NoAnswer: the daemon did not answer its socket in time.
	NoAnswer Kind = "no_answer"
	// MemoryLow: the box is about to run out of memory.
	MemoryLow Kind = "memory_low"
	// FDsLow: the box is about to run out of file descriptors.
	FDsLow Kind = "fds_low"
)

// Segment conditions.
const (
	// LinkDown: a segment port has no link (cable pulled, far end down,
	// or a relay in bypass that cuts the NIC off).
	LinkDown Kind = "link_down"
	// PortAbsent: the profile names a port the box does not have.
	PortAbsent Kind = "port_absent"
	// TxStalled: frames entered a port and none left its peer (802.3x
	// PAUSE from the far end, a stuck transmit queue).
	TxStalled Kind = "tx_stalled"
	// VLANStripped: a port's driver keeps VLAN tag stripping on, so the
	// forwarder would send tagged frames on without their tags.
	VLANStripped Kind = "vlan_stripped"
	// NotForwarded: the forwarder does not serve the segment at all.
	NotForwarded Kind = "not_forwarded"
	// RelayBypass: the segment's relay is in bypass (or disconnect).
	RelayBypass Kind = "relay_bypass"
	// RelayNotDrivable: bypassd cannot drive the segment's relay.
	RelayNotDrivable Kind = "relay_not_drivable"
	// RelayMismatch: the relay reads back other than what was wanted.
	RelayMismatch Kind = "relay_mismatch"
	// HoldDown: the forwarder is healthy again and the hold-down runs.
	HoldDown Kind = "hold_down"
)

// Box conditions.
const (
	// ConfigRejected: a configuration file was refused and an older one
	// runs.
	ConfigRejected Kind = "config_rejected"
	// PermDegraded: /perm is unmounted, read-only or nearly full.
	PermDegraded Kind = "perm_degraded"
	// ProfileIncomplete: the platform profile lacks what a part needs
	// (a register map, a port).
	ProfileIncomplete Kind = "profile_incomplete"
	// ProfileRefused: the bypass profile failed validation; every pair is
	// held in bypass.
	ProfileRefused Kind = "profile_refused"
	// ClockNotSet: the system clock has not been set (before 2020).
	ClockNotSet Kind = "clock_not_set"
	// ClockNotSynced: NTP servers are configured and none has answered
	// well for a while.
	ClockNotSynced Kind = "clock_not_synced"
	// NameUnresolved: a server the configuration gives by name does not
	// resolve.
	NameUnresolved Kind = "name_unresolved"
	// WatchdogUnpetted: the hardware watchdog is not being petted while
	// the box is live (no watchdogd, a failed ping).
	WatchdogUnpetted Kind = "watchdog_unpetted"
	// PlannedStop: a planned shutdown, reboot or update holds the relays.
	PlannedStop Kind = "planned_stop"
	// ConfigRevertOwed: a configuration change is being undone and a
	// daemon has not taken the version before yet; the box tries again,
	// and reboots onto the version it boots on if that keeps failing.
	ConfigRevertOwed Kind = "config_revert_owed"
)

// classes is the class of every known kind.
var classes = map[Kind]Class{
	HeartbeatStale: ClassLiveness, EngineFailed: ClassLiveness, ProgramDetached: ClassLiveness,
	CountersUnreadable: ClassLiveness, NoAnswer: ClassLiveness, MemoryLow: ClassLiveness, FDsLow: ClassLiveness,

	LinkDown: ClassSegment, PortAbsent: ClassSegment, TxStalled: ClassSegment, VLANStripped: ClassSegment, NotForwarded: ClassSegment,
	RelayBypass: ClassSegment, RelayNotDrivable: ClassSegment, RelayMismatch: ClassSegment, HoldDown: ClassSegment,

	ConfigRejected: ClassBox, PermDegraded: ClassBox, ProfileIncomplete: ClassBox, ProfileRefused: ClassBox,
	ClockNotSet: ClassBox, ClockNotSynced: ClassBox, NameUnresolved: ClassBox, WatchdogUnpetted: ClassBox, PlannedStop: ClassBox, ConfigRevertOwed: ClassBox,
}

// Class returns the class of k and whether k is known.
func (k Kind) Class() (Class, bool) {
	c, ok := classes[k]
	return c, ok
}

// Kinds returns every known kind, sorted.
func Kinds() []Kind {
	out := make([]Kind, 0, len(classes))
	for k := range classes {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Problem is one reason a daemon is not live.
type Problem struct {
	Kind   Kind   `json:"kind"`
	Detail string `json:"detail"`
}

// Liveness says whether a daemon is live: it answered (the caller knows
// that), its loop is fresh and its engine works.
type Liveness struct {
	Live      bool      `json:"live"`
	Heartbeat time.Time `json:"heartbeat,omitzero"`
	Problems  []Problem `json:"problems,omitempty"`
}

// Live returns a Liveness from problems, live when there are none.
func Live(heartbeat time.Time, problems ...Problem) Liveness {
	return Liveness{Live: len(problems) == 0, Heartbeat: heartbeat.UTC(), Problems: problems}
}

// String is for logs and reset records.
func (l Liveness) String() string {
	if l.Live {
		return "live"
	}
	s := ""
	for i, p := range l.Problems {
		if i > 0 {
			s += "; "
		}
		s += string(p.Kind) + ": " + p.Detail
	}
	return s
}

// Condition is one thing about the network or the box worth knowing. It
// never gates the watchdog.
type Condition struct {
	Kind    Kind      `json:"kind"`
	Segment string    `json:"segment,omitempty"`
	Port    string    `json:"port,omitempty"` // front-panel name
	Pair    string    `json:"pair,omitempty"` // bypass pair
	Since   time.Time `json:"since"`
	Source  string    `json:"source,omitempty"` // the daemon that reports it
	Detail  string    `json:"detail"`
}

// Key identifies a condition across reports: the same kind on the same
// segment, port and pair is the same condition, whatever its detail says.
func (c Condition) Key() string {
	return string(c.Kind) + "|" + c.Segment + "|" + c.Port + "|" + c.Pair
}

// String is for logs and events.
func (c Condition) String() string {
	var parts []string
	for _, p := range []string{c.Segment, c.Port, c.Pair} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	where := strings.Join(parts, " ")
	if where == "" {
		where = "box"
	}
	return fmt.Sprintf("%s (%s): %s", c.Kind, where, c.Detail)
}

// Report is what a daemon serves on GET /health.
type Report struct {
	Daemon string   `json:"daemon"`
	Live   Liveness `json:"live"`
	// Segments are the segments the daemon serves (forwarderd: those it
	// bridges), so that a segment it does not know is never taken for one
	// without conditions.
	Segments   []string    `json:"segments,omitempty"`
	Conditions []Condition `json:"conditions"`
}

// Segment returns the conditions of segment seg.
func (r Report) Segment(seg string) []Condition {
	var out []Condition
	for _, c := range r.Conditions {
		if c.Segment == seg {
			out = append(out, c)
		}
	}
	return out
}

// Has says whether conds hold one of kinds.
func Has(conds []Condition, kinds ...Kind) bool {
	for _, c := range conds {
		if slices.Contains(kinds, c.Kind) {
			return true
		}
	}
	return false
}

// Only says whether every condition in conds is one of kinds (true for
// none).
func Only(conds []Condition, kinds ...Kind) bool {
	for _, c := range conds {
		if !slices.Contains(kinds, c.Kind) {
			return false
		}
	}
	return true
}

// Sort orders conditions by segment, port, pair and kind, so that reports
// and pages are stable.
func Sort(conds []Condition) {
	sort.Slice(conds, func(i, j int) bool { return conds[i].Key() < conds[j].Key() })
}
