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
