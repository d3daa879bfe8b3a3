package api

// The control requests' bodies (web/API.md, "Control"): statusd decodes
// them, and the host's tools send them.

// OverrideAuto is the BypassRequest state that ends a manual override and
// lets the policy decide again.
const OverrideAuto = "auto"

// BypassRequest is POST /api/v1/control/bypass.
type BypassRequest struct {
	Segment string `json:"segment"`
	// State is "bypass", "disconnect" or "normal" (bypassapi.States) to
	// force that state, or OverrideAuto.
	State  string `json:"state"`
	Reason string `json:"reason"` // required except for OverrideAuto; logged
	// ExpiresIn ends the override after this long (Go duration, e.g.
	// "30m"); "" keeps it until OverrideAuto.
	ExpiresIn string `json:"expires_in,omitempty"`
	// Update marks an override ncpos update sets for its reboots
	// (bypassapi.Override.Update).
	Update bool `json:"update,omitempty"`
}

// RebootRequest is POST /api/v1/control/reboot.
type RebootRequest struct {
	Reason string `json:"reason"`
}

// PasswordRequest is POST /api/v1/control/password: the new control
// password, sent with the current one as Basic credentials.
type PasswordRequest struct {
	NewPassword string `json:"new_password"`
}

// InstallRequest is the body of POST /api/v1/control/install. Confirm
// must repeat the target, as a person typing it would.
type InstallRequest struct {
	Device   string `json:"device"`
	Confirm  string `json:"confirm"`
	WipePerm bool   `json:"wipe_perm"`
}

// SelfTestRequest is the body of POST /api/v1/control/selftest; the body
// and sizes are optional.
type SelfTestRequest struct {
	Sizes []int `json:"sizes"`
}

// InstallDisk is a disk the appliance could install itself onto.
type InstallDisk struct {
	Path      string `json:"path"`
	Model     string `json:"model"`
	SizeBytes int64  `json:"size_bytes"`
	Transport string `json:"transport"`
	Removable bool   `json:"removable"`
	Eligible  bool   `json:"eligible"`
	Why       string `json:"why_not,omitempty"` // why it is not eligible
}

// InstallJob is the state of the install-to-internal-disk job.
type InstallJob struct {
	State   string `json:"state"` // idle, running, done, failed
	Target  string `json:"target,omitempty"`
	Phase   string `json:"phase,omitempty"` // writing, verifying
	Done    int64  `json:"done_bytes"`
	Total   int64  `json:"total_bytes"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
	By      string `json:"by,omitempty"`
	Started string `json:"started,omitempty"`
}
