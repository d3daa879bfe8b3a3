// Package configapi serves the box's configuration: the one in force,
// checks and plans of a candidate, and changes in place (apply, confirm,
// revert, rollback) through the change manager, with their history.
package configapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/change"
	"github.com/ncpos/ncpos/web/reply"
)

// Configs is what statusd knows of the box's configuration: the text
// every daemon runs on, where init took it from, and the versions kept on
// /perm.
type Configs struct {
	// InForce reads the configuration every daemon runs on
	// (appliance.BootConfig).
	InForce func() ([]byte, error)
	// Source is where init took it from at boot.
	Source string
	// Versions is the history; nil when the box keeps none (no /perm).
	Versions *versions.Store
	// Changes applies, confirms and reverts versions in place; nil when
	// the box takes none (POST /api/v1/config/apply and the others
	// answer 503).
	Changes *change.Manager
}

// inForce reads the configuration in force and finds its version.
func (c *Configs) inForce() (*api.ConfigInForce, error) {
	text, err := c.InForce()
	if err != nil {
		return nil, fmt.Errorf("reading the configuration in force: %w", err)
	}
	cur := &api.ConfigInForce{Text: string(text), SHA256: versions.Sum(text), Source: c.Source}
	if c.Versions == nil {
		return cur, nil
	}
	v, err := c.Versions.VersionOf(text)
	if err != nil && v.Number == 0 {
		return nil, err
	}
	cur.Version, cur.By, cur.From, cur.Time = v.Number, v.By, v.From, v.Time
	return cur, nil
}

// check validates a candidate as the box validates its configuration at
// boot, and returns every problem.
func check(text string) (*config.Config, api.ConfigCheck) {
	cfg, err := config.ParseOnBox(api.ConfigFile, []byte(text))
	if err == nil {
		return cfg, api.ConfigCheck{Valid: true, Errors: []api.ConfigError{}}
	}
	res := api.ConfigCheck{}
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		res.Errors = append(res.Errors, api.ConfigError{Message: err.Error()})
		return nil, res
	}
	for _, fe := range ve.Errors {
		res.Errors = append(res.Errors, api.ConfigError{Line: fe.Line, Field: fe.Field, Message: fe.Error()})
	}
	return nil, res
}

// MaxConfigBytes bounds the body of a configuration request: a whole
// ncpos.toml, CA bundles for syslog over TLS included, as JSON.
const MaxConfigBytes = 512 << 10

// inForceLabel names the configuration in force in a diff.
func inForceLabel(version int) string {
	if version == 0 {
		return "in force"
	}
	return versions.Label(version) + " (in force)"
}

// Get serves GET /api/v1/config.
func (c *Configs) Get(w http.ResponseWriter, r *http.Request) {
	if c == nil {
		reply.Error(w, http.StatusServiceUnavailable, "this box does not serve its configuration")
		return
	}
	cur, err := c.inForce()
	if err != nil {
		reply.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	cur.Text = string(config.Redact([]byte(cur.Text)))
	ipc.WriteJSON(w, cur)
}

// unredact puts the secrets the box keeps back into a candidate that
// came from GET /api/v1/config; a placeholder it cannot fill answers 422.
func (c *Configs) unredact(w http.ResponseWriter, text string) (string, bool) {
	if !strings.Contains(text, config.RedactedSecret) || c == nil {
		return text, true
	}
	cur, err := c.InForce()
	if err != nil {
		reply.Error(w, http.StatusInternalServerError, fmt.Sprintf("reading the configuration in force: %v", err))
		return "", false
	}
	out, err := config.Unredact([]byte(text), cur)
	if err != nil {
		ipc.WriteJSONCode(w, http.StatusUnprocessableEntity, api.ConfigRefusal{Error: "the candidate has 1 problem(s)",
			ConfigCheck: api.ConfigCheck{Errors: []api.ConfigError{{Field: "auth.radius", Message: err.Error()}}}})
		return "", false
	}
	return string(out), true
}

// Check serves POST /api/v1/config/check.
func (c *Configs) Check(w http.ResponseWriter, r *http.Request) {
	var req api.ConfigCandidate
	if !reply.DecodeJSON(w, r, &req, MaxConfigBytes) {
		return
	}
	text, ok := c.unredact(w, req.Text)
	if !ok {
		return
	}
	_, res := check(text)
	ipc.WriteJSON(w, res)
}

// Plan serves POST /api/v1/config/plan.
func (c *Configs) Plan(w http.ResponseWriter, r *http.Request) {
	if c == nil {
		reply.Error(w, http.StatusServiceUnavailable, "this box does not serve its configuration")
		return
	}
	var req api.ConfigCandidate
	if !reply.DecodeJSON(w, r, &req, MaxConfigBytes) {
		return
	}
	text, ok := c.unredact(w, req.Text)
	if !ok {
		return
	}
	next, res := check(text)
	if !res.Valid {
		ipc.WriteJSONCode(w, http.StatusUnprocessableEntity, api.ConfigRefusal{
			Error: fmt.Sprintf("the candidate has %d problem(s)", len(res.Errors)), ConfigCheck: res})
		return
	}
	cur, err := c.inForce()
	if err != nil {
		reply.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	running, err := config.Parse("configuration in force", []byte(cur.Text))
	if err != nil {
		reply.Error(w, http.StatusInternalServerError, fmt.Sprintf("the configuration in force does not parse: %v", err))
		return
	}
	reattach := change.DefaultReattach
	if c.Changes != nil {
		reattach = c.Changes.Reattach()
	}
	changes := change.Plan(running, next, reattach)
	ipc.WriteJSON(w, api.ConfigPlan{Version: cur.Version, Changes: apiChanges(changes), Disturbs: string(config.Disturbs(changes)),
		Diff: versions.Diff(inForceLabel(cur.Version), config.Redact([]byte(cur.Text)), "candidate", config.Redact([]byte(text)))})
}

// apiVersion is a version's record as the API carries it.
func apiVersion(v versions.Version) api.Version {
	return api.Version{Number: v.Number, Parent: v.Parent, Time: v.Time, By: v.By, From: v.From, Source: v.Source,
		Comment: v.Comment, State: string(v.State), Deadline: v.Deadline, Reboot: v.Reboot, Reason: v.Reason,
		Done: v.Done, SHA256: v.SHA256}
}

// apiChanges are a plan's changes as the API carries them.
func apiChanges(cs []config.Change) []api.Change {
	out := make([]api.Change, len(cs))
	for i, c := range cs {
		out[i] = api.Change{Setting: c.Setting, Effect: string(c.Effect), Taker: c.Taker, Segments: c.Segments,
			AwayMS: c.AwayMS, Detail: c.Detail}
	}
	return out
}
