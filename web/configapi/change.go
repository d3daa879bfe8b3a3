package configapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/change"
	"github.com/ncpos/ncpos/web/reply"
)

// changes is the box's manager of configuration changes, or why there is
// none (answered with 503).
func (c *Configs) changes(w http.ResponseWriter) *change.Manager {
	if c == nil || c.Changes == nil {
		reply.Error(w, http.StatusServiceUnavailable, "this box does not change its configuration in place")
		return nil
	}
	return c.Changes
}

// takeTimeout bounds how long the daemons may take to take a change.
const takeTimeout = 2 * time.Minute

// waitForTake lets the answer to a change wait as long as the daemons
// may take it, and take the version before back if they fail to. The
// server's WriteTimeout (a minute) is shorter: past it the change was
// made but its answer lost, and on TLS the connection broken under the
// client ("bad record MAC"). Over HTTP/1.1, which statusd speaks, the
// deadline answerNow sets before the answer would do alone; over
// HTTP/2 the server resets the stream when its write timer fires, so the
// deadline must be moved before the wait, as it is here.
func waitForTake(w http.ResponseWriter) {
	// A writer without deadlines (a test's recorder) has none to pass.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(2*takeTimeout + 30*time.Second))
}

// answerNow gives the answer to a change, whose going back has no
// deadline of its own, half a minute from now to be written.
func answerNow(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(30 * time.Second))
}

// confirmWithin reads a request's deadline in seconds: absent, the
// default.
func confirmWithin(secs *int) (time.Duration, error) {
	if secs == nil {
		return change.DefaultConfirmWithin, nil
	}
	d := time.Duration(*secs) * time.Second
	if *secs < 0 || d > change.MaxConfirmWithin {
		return 0, fmt.Errorf("confirm_within %d: want 0 (no confirmation) to %d seconds", *secs, int(change.MaxConfirmWithin/time.Second))
	}
	return d, nil
}

// Apply serves POST /api/v1/config/apply.
func (c *Configs) Apply(w http.ResponseWriter, r *http.Request) {
	m := c.changes(w)
	if m == nil {
		return
	}
	var req api.ConfigApply
	if !reply.DecodeJSON(w, r, &req, MaxConfigBytes) {
		return
	}
	within, err := confirmWithin(req.ConfirmWithin)
	if err != nil {
		reply.Error(w, http.StatusBadRequest, err.Error())
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
	by, from := caller.Of(r)
	c.answerApplied(w, r, m, change.Request{Text: []byte(text), Next: next, Replaces: req.Replaces,
		ConfirmWithin: within, Comment: req.Comment, By: by, From: from, Reboot: req.Reboot})
}

// Rollback serves POST /api/v1/config/rollback.
func (c *Configs) Rollback(w http.ResponseWriter, r *http.Request) {
	m := c.changes(w)
	if m == nil {
		return
	}
	var req api.ConfigRollback
	if !reply.DecodeJSON(w, r, &req, 64<<10) {
		return
	}
	within, err := confirmWithin(req.ConfirmWithin)
	if err != nil {
		reply.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	_, text, err := c.Versions.Get(req.Version)
	if err != nil {
		c.conflict(w, http.StatusNotFound, api.ConfigNotFound, fmt.Errorf("version %d: %w", req.Version, err))
		return
	}
	next, res := check(string(text))
	if !res.Valid {
		ipc.WriteJSONCode(w, http.StatusUnprocessableEntity, api.ConfigRefusal{
			Error: fmt.Sprintf("version %d no longer passes this build's check: %d problem(s)", req.Version, len(res.Errors)), ConfigCheck: res})
		return
	}
	by, from := caller.Of(r)
	comment := req.Comment
	if comment == "" {
		comment = fmt.Sprintf("rollback to version %d", req.Version)
	}
	c.answerApplied(w, r, m, change.Request{Text: text, Next: next, Replaces: req.Replaces, ConfirmWithin: within,
		Comment: comment, By: by, From: from, Rollback: req.Version, Reboot: req.Reboot})
}

// answerApplied applies req and answers what was done, or why not. A
// client that goes away does not stop a change half-way.
func (c *Configs) answerApplied(w http.ResponseWriter, r *http.Request, m *change.Manager, req change.Request) {
	waitForTake(w)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), takeTimeout)
	defer cancel()
	res, err := m.Apply(ctx, req)
	answerNow(w)
	if err != nil {
		code, reason := http.StatusConflict, api.ConfigRefused
		switch {
		case errors.Is(err, change.ErrStale):
			reason = api.ConfigStale
		case errors.Is(err, change.ErrBusy):
			reason = api.ConfigBusy
		case errors.Is(err, change.ErrUnchanged):
			reason = api.ConfigUnchanged
		case errors.Is(err, change.ErrNotTaken):
			code, reason = http.StatusInternalServerError, api.ConfigNotTaken
		case errors.Is(err, change.ErrRefused):
		default:
			reply.Error(w, http.StatusInternalServerError, err.Error())
			return
		}
		c.conflict(w, code, reason, err)
		return
	}
	ipc.WriteJSON(w, api.ConfigApplied{Version: apiVersion(res.Version), Changes: apiChanges(res.Changes), TookMS: res.Took, Rebooting: res.Rebooting})
}

// conflict answers a change the box did not make, with the version in
// force.
func (c *Configs) conflict(w http.ResponseWriter, code int, reason string, err error) {
	_, n, _ := c.Changes.InForce()
	ipc.WriteJSONCode(w, code, api.ConfigConflict{Error: err.Error(), Reason: reason, Version: n})
}

// Confirm serves POST /api/v1/config/confirm.
func (c *Configs) Confirm(w http.ResponseWriter, r *http.Request) {
	c.settle(w, r, func(m *change.Manager, n int, by string) (versions.Version, error) { return m.Confirm(n, by) })
}

// Revert serves POST /api/v1/config/revert.
func (c *Configs) Revert(w http.ResponseWriter, r *http.Request) {
	waitForTake(w)
	c.settle(w, r, func(m *change.Manager, n int, by string) (versions.Version, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), takeTimeout)
		defer cancel()
		return m.Revert(ctx, n, "reverted by "+by)
	})
}

// settle confirms or reverts the version a request names.
func (c *Configs) settle(w http.ResponseWriter, r *http.Request, do func(*change.Manager, int, string) (versions.Version, error)) {
	m := c.changes(w)
	if m == nil {
		return
	}
	var req api.ConfigVersionRef
	if !reply.DecodeJSON(w, r, &req, 4<<10) {
		return
	}
	v, err := do(m, req.Version, caller.Who(r))
	answerNow(w)
	switch {
	case errors.Is(err, change.ErrNotPending):
		c.conflict(w, http.StatusConflict, api.ConfigNotFound, err)
	case err != nil:
		reply.Error(w, http.StatusInternalServerError, err.Error())
	default:
		ipc.WriteJSON(w, apiVersion(v))
	}
}

// History serves GET /api/v1/config/history.
func (c *Configs) History(w http.ResponseWriter, r *http.Request) {
	if c == nil || c.Versions == nil {
		reply.Error(w, http.StatusServiceUnavailable, "this box keeps no configuration history")
		return
	}
	all, err := c.Versions.List()
	h := api.ConfigHistory{Versions: []api.ConfigVersion{}}
	if err != nil {
		h.Errors = append(h.Errors, err.Error())
	}
	if c.Changes != nil {
		if p, ok := c.Changes.Pending(); ok {
			h.Pending = p.Number
		}
	}
	for _, v := range all {
		cv := api.ConfigVersion{Version: apiVersion(v)}
		_, text, err := c.Versions.Get(v.Number)
		if err != nil {
			h.Errors = append(h.Errors, err.Error())
		}
		var parent []byte
		if v.Parent > 0 {
			if _, parent, err = c.Versions.Get(v.Parent); err != nil {
				parent = nil // pruned: the diff is from nothing
			}
		}
		// The diff shows that a secret changed, not what it is.
		cv.Diff = versions.Diff(versions.Label(v.Parent), config.Redact(parent), versions.Label(v.Number), config.Redact(text))
		h.Versions = append(h.Versions, cv)
	}
	ipc.WriteJSON(w, h)
}
