package api

import (
	"net/url"
	"strconv"
	"time"
)

// The API's own records of what the box's daemons and stores report:
// statusd passes them on with the same JSON, but they are the API's, so
// that a host links none of the box's packages and a daemon's contract
// can change without the API changing underneath its users. A test of
// package web/monitor holds each to the JSON of what it carries.

// Event is one thing that happened on the box (package events' Event).
type Event struct {
	Seq      uint64            `json:"seq"`
	Time     time.Time         `json:"time"`
	Severity string            `json:"severity"` // as syslog names it: critical, error, warning, notice, info
	Kind     string            `json:"kind"`     // bypass, watchdog, link, config, selftest, daemon, control, boot, condition, login
	Message  string            `json:"message"`
	Fields   map[string]string `json:"fields,omitempty"` // e.g. segment, port, state
}

// Version is the record of one configuration version (package
// config/versions keeps them on /perm).
type Version struct {
	Number int       `json:"version"`
	Parent int       `json:"parent"` // the version it replaced; 0 for the first
	Time   time.Time `json:"time"`
	By     string    `json:"by"`   // who applied it
	From   string    `json:"from"` // the address it was applied from
	// Source says where the text came from when the box recorded it
	// itself (the configuration it booted on); "" for a change applied
	// from afar.
	Source   string    `json:"source,omitempty"`
	Comment  string    `json:"comment,omitempty"`
	State    string    `json:"state"`             // VersionPending, VersionConfirmed, VersionReverting or VersionReverted
	Deadline time.Time `json:"deadline,omitzero"` // pending: when it reverts by itself
	// Reboot says the box took it by a reboot (and goes back by one).
	Reboot bool `json:"reboot,omitempty"`
	// Reason says why a version was reverted, or confirmed by itself.
	Reason string    `json:"reason,omitempty"`
	Done   time.Time `json:"done,omitzero"` // when it was confirmed or reverted
	SHA256 string    `json:"sha256"`        // of the text
}

// The states of a Version.
const (
	VersionPending   = "pending"   // waits for its confirmation
	VersionConfirmed = "confirmed" // the box boots on the newest confirmed one
	VersionReverting = "reverting" // being undone: a daemon has not taken the version before yet
	VersionReverted  = "reverted"  // undone before it was confirmed
)

// Undone says the version was undone, or is being undone.
func (v Version) Undone() bool { return v.State == VersionReverting || v.State == VersionReverted }

// Change is one setting a configuration change touches, and what taking
// it does (package config's plan).
type Change struct {
	// Setting is the setting's path (snmp.community, selftest.ports), or
	// segment[NAME] for a segment added, removed or changed.
	Setting string `json:"setting"`
	Effect  string `json:"effect"` // EffectNone, EffectInPlace, EffectReattach or EffectReboot
	// Taker is the daemon (or init) that takes it; "" for a reboot.
	Taker string `json:"taker,omitempty"`
	// Segments are the segments re-attached.
	Segments []string `json:"segments,omitempty"`
	// AwayMS is about how long the segments named that forward now are
	// out of the datapath while they are re-attached, their relays in
	// bypass meanwhile; 0 when none of them forwards now.
	AwayMS int `json:"away_ms,omitempty"`
	// Detail says what changes: the fields of a segment, a segment
	// added or removed, what only a boot can do.
	Detail string `json:"detail,omitempty"`
}

// The effects of a Change, from none to a reboot.
const (
	EffectNone     = "none"      // no daemon's behaviour towards traffic changes
	EffectInPlace  = "in place"  // a daemon takes it without a restart
	EffectReattach = "re-attach" // the segments named are detached and attached again, each relay in bypass meanwhile
	EffectReboot   = "reboot"    // the box takes it only when it boots
)

// Override is an operator's override of a segment's bypass relay, as
// bypassd holds it.
type Override struct {
	State   string    `json:"state"` // bypass, disconnect or normal
	Reason  string    `json:"reason"`
	By      string    `json:"by,omitempty"`
	Set     time.Time `json:"set,omitzero"`
	Expires time.Time `json:"expires,omitzero"` // zero: until cleared
	// Update marks an override ncpos update set for its reboots.
	Update bool `json:"update,omitempty"`
}

// Petter is what watchdogd reports of its petting of the hardware
// watchdog.
type Petter struct {
	Device        string       `json:"device"`
	Identity      string       `json:"identity"`
	Source        string       `json:"source"` // how watchdogd got the device
	TimeoutSec    int          `json:"timeout_seconds"`
	TimeLeftSec   int          `json:"time_left_seconds"` // -1 when the driver cannot tell
	IntervalSec   float64      `json:"interval_seconds"`
	Petting       bool         `json:"petting"` // false once a required check failed
	StoppedReason string       `json:"stopped_reason,omitempty"`
	InGrace       bool         `json:"in_grace"`
	Pings         uint64       `json:"pings"`
	LastPing      time.Time    `json:"last_ping"`
	LastPingError string       `json:"last_ping_error,omitempty"`
	Checks        []PetterTest `json:"checks"`
	LastReset     LastReset    `json:"last_reset"`
}

// PetterTest is the latest result of one of the checks watchdogd gates
// its petting on.
type PetterTest struct {
	Name     string    `json:"name"`
	OK       bool      `json:"ok"`
	Error    string    `json:"error,omitempty"`
	Since    time.Time `json:"since"` // when it last changed between ok and failing
	LastRun  time.Time `json:"last_run"`
	Duration float64   `json:"duration_seconds"`
}

// LastReset is why the current boot happened.
type LastReset struct {
	Kind       string    `json:"kind"`   // "watchdog", "planned reboot" or "power-on"
	Detail     string    `json:"detail"` // failing checks, or what was planned
	Text       string    `json:"text"`   // for people
	BootStatus uint32    `json:"boot_status"`
	BootID     string    `json:"boot_id"`
	Decided    time.Time `json:"decided"`
}

// Holder is a process that has a watchdog device open.
type Holder struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
	FD   int    `json:"fd"`
	Path string `json:"path"`
}

// PortSetting is a setting ncpos made on a data port's NIC before it
// attached, as the driver read it back.
type PortSetting struct {
	Name   string `json:"name"` // ethtool's name: rx-vlan-hw-parse, pause, disable-fw-lldp, …
	Want   string `json:"want"` // "off" or "on"
	Got    string `json:"got"`  // as read back; "" when the driver does not offer it
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// Neighbor is a station whose LLDP frames a segment port received, as
// the port last heard it (IEEE 802.1AB).
type Neighbor struct {
	Port string `json:"port"`
	// Index numbers the port's neighbours in the order they came, and
	// stays while the neighbour does (LLDP-MIB's lldpRemIndex).
	Index int `json:"index"`
	// ChassisID and PortID identify the neighbour and its port, rendered
	// by their subtypes: a MAC address as aa:bb:…, a network address as
	// an IP, a name as text.
	ChassisID        string `json:"chassis_id"`
	ChassisIDSubtype int    `json:"chassis_id_subtype"`
	PortID           string `json:"port_id"`
	PortIDSubtype    int    `json:"port_id_subtype"`
	// TTL is how long the neighbour's information stays valid, in
	// seconds.
	TTL               int       `json:"ttl_seconds"`
	PortDescription   string    `json:"port_description,omitempty"`
	SystemName        string    `json:"system_name,omitempty"`
	SystemDescription string    `json:"system_description,omitempty"`
	ManagementAddress string    `json:"management_address,omitempty"` // the first the frame names
	LastSeen          time.Time `json:"last_seen"`
	Expires           time.Time `json:"expires"` // LastSeen + TTL: aged out after
}

// CaptureRequest is what a capture asks for (POST /api/v1/capture).
type CaptureRequest struct {
	Port      string // front-panel label, say LAN1
	Direction string // "in" (the default), "out" or "both"
	Filter    string // pcap-filter(7) syntax; empty keeps every frame
	Seconds   int    // how long it runs; 0 is 60 s
	Frames    int    // stops after this many frames; 0 is no limit
	Snaplen   int    // bytes of each frame kept; 0 is 16384
}

// Query encodes r for the capture's URL.
func (r CaptureRequest) Query() url.Values {
	q := url.Values{"port": {r.Port}}
	if r.Direction != "" {
		q.Set("direction", r.Direction)
	}
	if r.Filter != "" {
		q.Set("filter", r.Filter)
	}
	for k, v := range map[string]int{"seconds": r.Seconds, "frames": r.Frames, "snaplen": r.Snaplen} {
		if v != 0 {
			q.Set(k, strconv.Itoa(v))
		}
	}
	return q
}
