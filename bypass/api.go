package bypass

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/ipc"
)

// Handler is bypassd's socket: the standard /healthz, /status and
// /metrics, plus control:
//
//	POST   /override  {"pair","state","reason","for","by"}  manual override (reason required)
//	DELETE /override?pair=P&by=U                            back to automatic
//	POST   /planned   {"kind","reason"}                     bypass before shutdown/reboot/update; 200 once set
//	DELETE /planned?by=U                                    call it off
//
// Control answers with the resulting /status. The socket is root's only;
// statusd's authenticated API is the way in from the network.
func (s *Supervisor) Handler() *http.ServeMux {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	mux := ipc.Handler(s.Report, func() any { return s.Status() }, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	fail := func(w http.ResponseWriter, code int, err error) {
		http.Error(w, err.Error(), code)
	}
	mux.HandleFunc("POST /override", func(w http.ResponseWriter, r *http.Request) {
		var req bypassapi.OverrideRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
			fail(w, http.StatusBadRequest, fmt.Errorf("override: %w", err))
			return
		}
		o := bypassapi.Override{State: req.State, Reason: strings.TrimSpace(req.Reason), By: req.By, Update: req.Update}
		if req.For != "" {
			d, err := time.ParseDuration(req.For)
			if err != nil || d <= 0 {
				fail(w, http.StatusBadRequest, fmt.Errorf("override: for %q is not a positive duration such as \"10m\"", req.For))
				return
			}
			o.Expires = s.opts.Now().Add(d)
		}
		if err := s.SetOverride(req.Pair, o); err != nil {
			fail(w, http.StatusBadRequest, fmt.Errorf("override: %w", err))
			return
		}
		ipc.WriteJSON(w, s.Status())
	})
	mux.HandleFunc("DELETE /override", func(w http.ResponseWriter, r *http.Request) {
		if err := s.ClearOverride(r.URL.Query().Get("pair"), r.URL.Query().Get("by")); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		ipc.WriteJSON(w, s.Status())
	})
	mux.HandleFunc("POST /planned", func(w http.ResponseWriter, r *http.Request) {
		var req bypassapi.PlanRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
			fail(w, http.StatusBadRequest, fmt.Errorf("planned: %w", err))
			return
		}
		if !slices.Contains(bypassapi.PlanKinds, req.Kind) {
			fail(w, http.StatusBadRequest, fmt.Errorf("planned: kind %q, want shutdown, reboot or update", req.Kind))
			return
		}
		if err := s.Plan(req.Kind, req.Reason); err != nil {
			fail(w, http.StatusInternalServerError, err)
			return
		}
		ipc.WriteJSON(w, s.Status())
	})
	mux.HandleFunc("DELETE /planned", func(w http.ResponseWriter, r *http.Request) {
		s.Unplan(r.URL.Query().Get("by"))
		ipc.WriteJSON(w, s.Status())
	})
	mux.HandleFunc("POST /reconfigure", func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Reload == nil {
			fail(w, http.StatusConflict, errors.New("reconfigure: this bypassd runs on its flags' pairs, not on a configuration"))
			return
		}
		set, err := s.opts.Reload()
		if err != nil {
			fail(w, http.StatusUnprocessableEntity, fmt.Errorf("reconfigure: reading the configuration: %w", err))
			return
		}
		res, err := s.Reconfigure(set)
		if err != nil {
			fail(w, http.StatusUnprocessableEntity, fmt.Errorf("reconfigure: %w", err))
			return
		}
		ipc.WriteJSON(w, res)
	})
	return mux
}
