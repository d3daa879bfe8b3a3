package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/reply"
	"github.com/ncpos/ncpos/web/selftest"
)

// handleSelfTestJob serves GET /api/v1/selftest/job: the state of the
// job, and why the self-test cannot run here, if it cannot.
func (s *Server) handleSelfTestJob(w http.ResponseWriter, r *http.Request) {
	j := s.SelfTest
	if j == nil {
		reply.Error(w, http.StatusServiceUnavailable, "the self-test is not available here")
		return
	}
	job := j.Job()
	ready := ""
	if err := j.Ready(); err != nil {
		ready = err.Error()
	}
	ipc.WriteJSON(w, map[string]any{"job": job, "unavailable": ready})
}

// handleSelfTest serves POST /api/v1/control/selftest.
func (s *Server) handleSelfTest(w http.ResponseWriter, r *http.Request) {
	j := s.SelfTest
	var req api.SelfTestRequest
	if r.ContentLength != 0 && !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	if j == nil {
		reply.Error(w, http.StatusServiceUnavailable, "the self-test is not available here")
		return
	}
	if err := selftest.CheckSizes(req.Sizes); err != nil {
		reply.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := j.Ready(); err != nil {
		reply.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	by := caller.Who(r)
	if err := j.Start(req.Sizes, by); err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, selftest.ErrRunning) {
			code = http.StatusConflict
		}
		reply.Error(w, code, err.Error())
		return
	}
	sizes := "configured sizes"
	if len(req.Sizes) > 0 {
		strs := make([]string, len(req.Sizes))
		for i, n := range req.Sizes {
			strs[i] = strconv.Itoa(n)
		}
		sizes = strings.Join(strs, ",") + " bytes"
	}
	s.event(events.Notice, events.KindControl, []string{"action", "selftest", "by", by},
		fmt.Sprintf("self-test (%s) started by %s", sizes, by))
	ipc.WriteJSONCode(w, http.StatusAccepted, j.Job())
}
