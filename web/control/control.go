// Package control serves statusd's control of the box: a segment's bypass
// override (POST /api/v1/control/bypass, which bypassd carries out) and a
// reboot (POST /api/v1/control/reboot, through gokrazy).
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/reply"
)

// BypassOverride is an override as statusd hands it to bypassd.
type BypassOverride struct {
	Segment   string
	Pair      string // the segment's relay pair
	State     string // bypass, disconnect, normal, or auto to end the override
	Reason    string
	ExpiresIn time.Duration // 0: until ended
	By        string        // who asked: user@address
	Update    bool          // set by ncpos update
}

// BypassController carries out overrides; the default asks bypassd.
type BypassController interface {
	Override(ctx context.Context, o BypassOverride) (*api.BypassState, error)
}

// errNotRunning says the daemon that would carry out a request is absent.
var errNotRunning = errors.New("not running")

// bypassdOverrides asks bypassd through its client: an override sets the pair's
// state, OverrideAuto clears it; both answer with bypassd's /status.
type bypassdOverrides struct{ runDir string }

func (b bypassdOverrides) Override(ctx context.Context, o BypassOverride) (*api.BypassState, error) {
	c := bypassapi.NewClient(b.runDir, 10*time.Second)
	var st bypassapi.Status
	var err error
	if o.State == api.OverrideAuto {
		st, err = c.ClearOverride(ctx, o.Pair, o.By)
	} else {
		req := bypassapi.OverrideRequest{Pair: o.Pair, State: bypassapi.State(o.State), Reason: o.Reason, By: o.By, Update: o.Update}
		if o.ExpiresIn > 0 {
			req.For = o.ExpiresIn.String()
		}
		st, err = c.Override(ctx, req)
	}
	if ipc.NotRunning(err) {
		return nil, fmt.Errorf("bypassd %w", errNotRunning)
	}
	if err != nil {
		return nil, err
	}
	bs, ok := monitor.BypassPair(&st, o.Segment, o.Pair)
	if !ok {
		return nil, fmt.Errorf("bypassd does not report pair %s of segment %s", o.Pair, o.Segment)
	}
	return bs, nil
}

// overrideStates are what a BypassRequest may ask for: a relay state, or
// OverrideAuto.
var overrideStates = append(bypassapi.StateNames(bypassapi.States), api.OverrideAuto)

// maxOverride is the longest expiry an override may ask for.
const maxOverride = 7 * 24 * time.Hour

// API serves the control routes.
type API struct {
	Bypass   BypassController // nil: ask bypassd on its socket in RunDir
	Rebooter Rebooter         // nil: reboot answers 503
	// Configuration is the configuration in force, for the segments'
	// relay pairs.
	Configuration func() *config.Config
	RunDir        string
	Events        *events.Log
}

// Override serves POST /api/v1/control/bypass.
func (s *API) Override(w http.ResponseWriter, r *http.Request) {
	var req api.BypassRequest
	if !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	req.Reason = strings.TrimSpace(req.Reason)
	switch {
	case !slices.Contains(overrideStates, req.State):
		reply.Error(w, http.StatusBadRequest, fmt.Sprintf("state %q: want one of %s", req.State, strings.Join(overrideStates, ", ")))
		return
	case req.State != api.OverrideAuto && req.Reason == "":
		reply.Error(w, http.StatusBadRequest, "reason is required: say why, it is logged")
		return
	case len(req.Reason) > 256:
		reply.Error(w, http.StatusBadRequest, "reason longer than 256 bytes")
		return
	}
	pair, ok := s.segmentPair(req.Segment)
	switch {
	case !ok:
		reply.Error(w, http.StatusNotFound, fmt.Sprintf("no segment %q in the configuration", req.Segment))
		return
	case pair == "":
		reply.Error(w, http.StatusConflict, fmt.Sprintf("segment %q has no bypass relay pair", req.Segment))
		return
	}
	o := BypassOverride{Segment: req.Segment, Pair: pair, State: req.State, Reason: req.Reason, By: caller.Who(r), Update: req.Update && req.State != api.OverrideAuto}
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 || d > maxOverride {
			reply.Error(w, http.StatusBadRequest, fmt.Sprintf("expires_in %q: want a duration such as \"30m\", at most %v", req.ExpiresIn, maxOverride))
			return
		}
		o.ExpiresIn = d
	}
	st, err := s.bypass().Override(r.Context(), o)
	var se *ipc.StatusError
	switch {
	case errors.Is(err, errNotRunning):
		reply.Error(w, http.StatusServiceUnavailable, "bypassd not running")
		return
	case errors.As(err, &se) && se.Code/100 == 4:
		reply.Error(w, se.Code, "bypassd: "+se.Message)
		return
	case err != nil:
		reply.Error(w, http.StatusBadGateway, err.Error())
		return
	}
	msg := fmt.Sprintf("manual bypass override of segment %s: %s, by %s: %s", o.Segment, o.State, o.By, o.Reason)
	if o.State == api.OverrideAuto {
		msg = fmt.Sprintf("manual bypass override of segment %s ended by %s", o.Segment, o.By)
	}
	if o.ExpiresIn > 0 {
		msg += fmt.Sprintf(", for %v", o.ExpiresIn)
	}
	sev := events.Warning
	if o.State == api.OverrideAuto {
		sev = events.Notice
	}
	s.Events.Note(sev, events.KindControl, []string{"segment", o.Segment, "state", o.State, "by", o.By}, msg)
	ipc.WriteJSON(w, st)
}

// Reboot serves POST /api/v1/control/reboot.
func (s *API) Reboot(w http.ResponseWriter, r *http.Request) {
	var req api.RebootRequest
	if !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	req.Reason = strings.TrimSpace(req.Reason)
	if len(req.Reason) > 256 {
		reply.Error(w, http.StatusBadRequest, "reason longer than 256 bytes")
		return
	}
	if req.Reason == "" {
		req.Reason = "no reason given"
	}
	if s.Rebooter == nil {
		reply.Error(w, http.StatusServiceUnavailable, "reboot is not available here")
		return
	}
	by := caller.Who(r)
	s.Events.Note(events.Warning, events.KindControl, []string{"action", "reboot", "by", by}, fmt.Sprintf("reboot requested by %s: %s", by, req.Reason))
	if err := s.Rebooter.Reboot(r.Context(), req.Reason); err != nil {
		log.Printf("statusd: reboot: %v", err)
		reply.Error(w, http.StatusBadGateway, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]string{"status": "rebooting", "reason": req.Reason})
}

// segmentPair returns the bypass pair of the named segment ("" for none)
// and whether the configuration has the segment.
func (s *API) segmentPair(name string) (string, bool) {
	cfg := s.Configuration()
	if cfg == nil {
		return "", false
	}
	for _, seg := range cfg.Segments {
		if seg.Name == name {
			return seg.Bypass, true
		}
	}
	return "", false
}

func (s *API) bypass() BypassController {
	if s.Bypass != nil {
		return s.Bypass
	}
	return bypassdOverrides{runDir: s.RunDir}
}
