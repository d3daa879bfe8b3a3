package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/ncpos/ncpos/config"
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
	Changes []config.Change `json:"changes"`
	// Disturbs is the greatest effect of the changes.
	Disturbs config.Effect `json:"disturbs"`
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
