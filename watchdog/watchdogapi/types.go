// Package watchdogapi is watchdogd's contract: what it reports on its
// unix socket (the petting, the checks it gates on, why the box last
// reset), the watchdog device's holders statusd shows beside it, and
// the Client every caller asks watchdogd with.
package watchdogapi

import "time"

// Status is what watchdogd reports on GET /status.
type Status struct {
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
	Checks        []CheckState `json:"checks"`
	LastReset     LastReset    `json:"last_reset"`
}

// CheckState is the latest result of one check.
type CheckState struct {
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
	Text       string    `json:"text"`   // for people, e.g. "watchdog (forwarderd /healthz failing since …)"
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

// Retimed is the timings watchdogd took in place (POST /reconfigure).
type Retimed struct {
	TimeoutSec  int     `json:"timeout_seconds"` // as the hardware took it
	IntervalSec float64 `json:"interval_seconds"`
	GraceSec    float64 `json:"grace_seconds"`
}
