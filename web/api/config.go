package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// ConfigInForce is the answer of GET /api/v1/config: the configuration
// every daemon runs on, as text, and where it came from.
type ConfigInForce struct {
	Text   string `json:"text"`
	SHA256 string `json:"sha256"`
	// Version is its number in the box's history; 0 when it is not a
	// version there (the box has booted on it and no change was applied
	// since).
	Version int `json:"version"`
	// Source is where the box took it from at boot (its file, the last
	// good one, the built-in default).
	Source string `json:"source"`
	// By, From and Time say who applied the version, from which address
	// and when; empty for version 0.
	By   string    `json:"by,omitempty"`
	From string    `json:"from,omitempty"`
	Time time.Time `json:"time,omitzero"`
}

// ConfigCandidate is the body of POST /api/v1/config/check and
// /api/v1/config/plan: a whole ncpos.toml.
type ConfigCandidate struct {
	Text string `json:"text"`
}

// ConfigFile is the name a candidate's messages give it.
const ConfigFile = "ncpos.toml"

// ConfigError is one problem of a candidate.
type ConfigError struct {
	Line  int    `json:"line,omitempty"`
	Field string `json:"field,omitempty"`
	// Message is the whole problem as `file:line: field: what is wrong`.
	Message string `json:"message"`
}

// ConfigCheck is the answer of POST /api/v1/config/check: every problem
// the box finds, as it would at boot.
type ConfigCheck struct {
	Valid  bool          `json:"valid"`
	Errors []ConfigError `json:"errors"`
}

// ConfigRefusal is the answer of a configuration route to an invalid
// candidate (422): why, and every problem.
type ConfigRefusal struct {
	Error string `json:"error"`
	ConfigCheck
}

// ConfigPlan is the answer of POST /api/v1/config/plan: what applying the
// candidate in place of the configuration in force would do.
type ConfigPlan struct {
	// Version is the version in force the plan is made against, the one
	// an apply names as the version it replaces.
	Version int `json:"version"`
	// Changes are the settings that differ, one per setting (per segment
	// for segments), and what taking each does.
	Changes []Change `json:"changes"`
	// Disturbs is the greatest effect of the changes.
	Disturbs string `json:"disturbs"`
	// Diff is the unified diff from the text in force to the candidate.
	Diff string `json:"diff"`
}

// Config reads the configuration in force.
func (c *Client) Config(ctx context.Context) (*ConfigInForce, error) {
	var cur ConfigInForce
	if err := c.Get(ctx, "api/v1/config", &cur); err != nil {
		return nil, err
	}
	return &cur, nil
}

// CheckConfig has the box check a candidate as it checks its
// configuration at boot.
func (c *Client) CheckConfig(ctx context.Context, text string) (*ConfigCheck, error) {
	var res ConfigCheck
	if err := c.Post(ctx, "api/v1/config/check", ConfigCandidate{Text: text}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// PlanConfig asks what applying a candidate would do. An invalid
// candidate has no plan: the box's check of it is returned instead.
func (c *Client) PlanConfig(ctx context.Context, text string) (*ConfigPlan, *ConfigCheck, error) {
	var plan ConfigPlan
	err := c.Post(ctx, "api/v1/config/plan", ConfigCandidate{Text: text}, &plan)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusUnprocessableEntity {
		var ref ConfigRefusal
		if jerr := json.Unmarshal(se.Body, &ref); jerr == nil && !ref.Valid && len(ref.Errors) > 0 {
			return nil, &ref.ConfigCheck, nil
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return &plan, nil, nil
}

// ConfigApply is the body of POST /api/v1/config/apply: a candidate, the
// version in force it replaces, and the confirm deadline.
type ConfigApply struct {
	Text     string `json:"text"`
	Replaces int    `json:"replaces"`
	// ConfirmWithin is the confirm deadline in seconds: the box goes
	// back to the version it replaces unless the change is confirmed by
	// then. Absent: 600; 0: confirmed at once.
	ConfirmWithin *int   `json:"confirm_within,omitempty"`
	Comment       string `json:"comment,omitempty"`
	// Reboot lets a change that only a boot takes reboot the box: it
	// boots on it once, and back on the version before unless the change
	// is confirmed by its deadline. A change the daemons take in place
	// is taken in place all the same.
	Reboot bool `json:"reboot,omitempty"`
}

// ConfigRollback is the body of POST /api/v1/config/rollback: apply an
// earlier version again, with a confirm deadline as an apply has.
type ConfigRollback struct {
	Version       int    `json:"version"`
	Replaces      int    `json:"replaces"`
	ConfirmWithin *int   `json:"confirm_within,omitempty"`
	Comment       string `json:"comment,omitempty"`
	Reboot        bool   `json:"reboot,omitempty"` // as ConfigApply's
}

// ConfigVersionRef names a version: the body of POST
// /api/v1/config/confirm and /api/v1/config/revert.
type ConfigVersionRef struct {
	Version int `json:"version"`
}

// ConfigApplied is the answer of an apply or a rollback: the version
// made, what changed, and how long each taker took.
type ConfigApplied struct {
	Version Version            `json:"version"`
	Changes []Change           `json:"changes"`
	TookMS  map[string]float64 `json:"took_ms"`
	// Rebooting: the box reboots to take the change.
	Rebooting bool `json:"rebooting,omitempty"`
}

// Why a configuration change was refused (ConfigConflict.Reason).
const (
	ConfigStale     = "stale"     // the version in force is not the one it replaces
	ConfigBusy      = "busy"      // another change waits for its confirmation
	ConfigRefused   = "refused"   // it needs a reboot, or a taker the box lacks
	ConfigUnchanged = "unchanged" // it is the configuration in force
	ConfigNotTaken  = "not_taken" // a daemon failed to take it: the box went back
	ConfigNotFound  = "not_found" // no such version, or none waiting for confirmation
)

// ConfigConflict is the answer of a configuration change the box did not
// make (409, or 500 for ConfigNotTaken): why, as a word and in full, and
// the version in force.
type ConfigConflict struct {
	Error   string `json:"error"`
	Reason  string `json:"reason"`
	Version int    `json:"version"`
}

// ConfigHistory is the answer of GET /api/v1/config/history: the versions
// the box keeps, newest first, each with its diff from the version it
// replaced.
type ConfigHistory struct {
	Versions []ConfigVersion `json:"versions"`
	// Pending is the version waiting for its confirmation; 0: none.
	Pending int `json:"pending"`
	// Errors name records that do not read.
	Errors []string `json:"errors,omitempty"`
}

// ConfigVersion is one version of the history.
type ConfigVersion struct {
	Version
	Diff string `json:"diff"`
}

// ApplyConfig applies a candidate in place of the version it replaces.
func (c *Client) ApplyConfig(ctx context.Context, req ConfigApply) (*ConfigApplied, error) {
	var res ConfigApplied
	if err := c.Post(ctx, "api/v1/config/apply", req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// RollbackConfig applies an earlier version again.
func (c *Client) RollbackConfig(ctx context.Context, req ConfigRollback) (*ConfigApplied, error) {
	var res ConfigApplied
	if err := c.Post(ctx, "api/v1/config/rollback", req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ConfirmConfig confirms the pending version n.
func (c *Client) ConfirmConfig(ctx context.Context, n int) (*Version, error) {
	var v Version
	if err := c.Post(ctx, "api/v1/config/confirm", ConfigVersionRef{Version: n}, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// RevertConfig reverts the pending version n now.
func (c *Client) RevertConfig(ctx context.Context, n int) (*Version, error) {
	var v Version
	if err := c.Post(ctx, "api/v1/config/revert", ConfigVersionRef{Version: n}, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// ConfigHistory reads the versions the box keeps.
func (c *Client) ConfigHistory(ctx context.Context) (*ConfigHistory, error) {
	var h ConfigHistory
	if err := c.Get(ctx, "api/v1/config/history", &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Conflict reads why the box did not make a configuration change, from
// an error of ApplyConfig, RollbackConfig, ConfirmConfig or RevertConfig;
// ok is false for any other error.
func Conflict(err error) (c ConfigConflict, ok bool) {
	var se *StatusError
	if !errors.As(err, &se) {
		return c, false
	}
	if json.Unmarshal(se.Body, &c) != nil || c.Reason == "" {
		return c, false
	}
	return c, true
}
