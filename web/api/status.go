package api

import (
	"encoding/json"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
)

// Snapshot is everything the dashboard shows at one moment; it is
// GET /api/v1/status (see API.md). statusd serves it, the host's fleet
// report and the QEMU tests decode it.
type Snapshot struct {
	Time     time.Time `json:"time"`
	Summary  Summary   `json:"summary"`
	System   *System   `json:"system"`
	Host     Host      `json:"host"`
	Ports    []Port    `json:"ports"`
	Segments []Segment `json:"segments"`
	// Conditions are what the daemons report of the segments and the box
	// (see package health), with statusd's own; they never reset the box.
	Conditions []health.Condition `json:"conditions"`
	Bypass     []string           `json:"bypass_notes,omitempty"` // bypassd's failsafe or planned stop, which hold every pair
	SelfTest   *SelfTest          `json:"self_test"`
	// Hardware is bypassd's probe of this boot: what bypass and watchdog
	// hardware the box has and which profiles fit (nil until bypassd
	// has run it).
	// Hardware is bypassd's probe of this boot, passed on as bypassd
	// wrote it (API.md shows its fields).
	Hardware json.RawMessage `json:"hardware"`
	Events   []Event         `json:"events"`
	Control  ControlInfo     `json:"control"`
	Errors   []string        `json:"errors,omitempty"`
}

// ControlInfo tells the dashboard how control works here.
type ControlInfo struct {
	AuthRead       bool     `json:"auth_read"`
	PasswordSource string   `json:"password_source"` // status.password_hash, status.password, the file on /perm, or "" (control impossible)
	Users          []string `json:"users"`
	Bypass         string   `json:"bypass"`        // "available" or why not
	Reboot         string   `json:"reboot"`        // "available" or why not
	TLS            *TLSInfo `json:"tls,omitempty"` // nil: served without TLS (tests, the lab)
}

// TLSInfo is the box's key as hosts pin it.
type TLSInfo struct {
	Fingerprint string `json:"fingerprint"` // sha256:<hex of the public key's SHA-256>
	Kept        bool   `json:"kept"`        // on /perm, the same after reboots and updates
	Note        string `json:"note,omitempty"`
}

// Daemon states as the dashboard and the API show them. "healthy" means
// live: the daemon answers its /livez and says its loop and engine work;
// what it reports of the network or the box is in the conditions.
const (
	DaemonHealthy       = "healthy"
	DaemonUnhealthy     = "unhealthy"
	DaemonNotRunning    = "not running"
	DaemonNotConfigured = "not configured"
)

// SelfTestJob is the state of the self-test job (GET /api/v1/selftest/job).
type SelfTestJob struct {
	State    string `json:"state"`           // idle, running, done, failed
	Sizes    []int  `json:"sizes,omitempty"` // frame sizes of the run
	Size     int    `json:"size,omitempty"`  // the size being measured
	Done     int    `json:"done_sizes"`      // sizes finished
	Total    int    `json:"total_sizes"`
	Result   string `json:"result,omitempty"`
	Error    string `json:"error,omitempty"`
	By       string `json:"by,omitempty"`
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
}
