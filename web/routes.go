package web

import (
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/accounts"
	"github.com/ncpos/ncpos/web/capture"
	"github.com/ncpos/ncpos/web/metrics"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/reply"
	"github.com/ncpos/ncpos/web/update"
)

// route is one route of the API and the least role that may use it.
// API.md's table of roles lists every route as this table does; a test
// holds the two together.
type route struct {
	pattern string
	// need is the least role; accounts.None: open to anyone.
	need accounts.Role
	// read marks what only reads and shows no secret: open unless
	// status.auth_read is set, then for a viewer. Everything else needs
	// its role always.
	read bool
	h    http.Handler
}

// audit says whether the audit trail records the route's requests: every
// one that changes something, and reading the configuration, which holds
// the box's keys. (Refusals are recorded for every route.)
func (rt route) audit() bool {
	return !strings.HasPrefix(rt.pattern, "GET ") || rt.pattern == "GET /api/v1/config"
}

func (s *Server) routes() []route {
	view := func(pattern string, h http.HandlerFunc) route {
		return route{pattern: pattern, need: accounts.Viewer, read: true, h: h}
	}
	need := func(role accounts.Role, pattern string, h http.HandlerFunc) route {
		return route{pattern: pattern, need: role, h: h}
	}
	op, admin, signedIn := accounts.Operator, accounts.Admin, accounts.Viewer
	static, _ := fs.Sub(staticFS, "static")
	return []route{
		{pattern: "GET /healthz", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "ok")
		})},
		{pattern: "GET /static/", need: accounts.Viewer, read: true, h: http.StripPrefix("/static/", http.FileServerFS(static))},
		view("GET /{$}", s.handlePage),
		view("GET /metrics", metrics.Handler(metrics.Sources{Monitor: s.Monitor, Logs: s.Logs, Outputs: s.outputs, Guards: s.guardCounts}).ServeHTTP),
		view("GET /api/v1/{$}", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, map[string]any{"endpoints": apiIndex})
		}),
		view("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, s.status(r))
		}),
		view("GET /api/v1/system", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, s.Monitor.Latest(r.Context()).System)
		}),
		view("GET /api/v1/ports", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, map[string]any{"ports": s.status(r).Ports})
		}),
		view("GET /api/v1/segments", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, map[string]any{"segments": s.Monitor.Latest(r.Context()).Segments})
		}),
		view("GET /api/v1/watchdog", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, s.Monitor.Latest(r.Context()).System.Watchdog)
		}),
		view("GET /api/v1/host", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, s.Monitor.Latest(r.Context()).Host)
		}),
		view("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, map[string]any{"events": s.events(r)})
		}),
		view("GET /api/v1/logs", s.handleLogs),
		view("GET /api/v1/hardware", func(w http.ResponseWriter, r *http.Request) {
			ipc.WriteJSON(w, map[string]any{"hardware": s.Monitor.Latest(r.Context()).Hardware})
		}),
		view("GET /api/v1/selftest", func(w http.ResponseWriter, r *http.Request) {
			// The report as it is now, not the latest snapshot's: a client
			// that saw the self-test's job end reads that run's report.
			st, err := monitor.ReadSelfTest(s.Monitor.SelfTestPath())
			if err != nil {
				reply.Error(w, http.StatusInternalServerError, err.Error())
				return
			}
			ipc.WriteJSON(w, map[string]any{"self_test": st})
		}),
		view("GET /api/v1/selftest/job", s.handleSelfTestJob),
		need(signedIn, "GET /api/v1/whoami", s.handleWhoami),
		need(op, "POST /api/v1/control/bypass", s.control().Override),
		need(op, "POST /api/v1/control/reboot", s.control().Reboot),
		need(op, "POST /api/v1/control/selftest", s.handleSelfTest),
		// Each account changes its own password; an admin anyone's.
		need(signedIn, "POST /api/v1/control/password", s.handlePassword),
		// Updates: gokrazy's endpoints, reached only through here.
		need(admin, "/api/v1/update/{step}", (&update.API{Gate: s.Updates, BootFiles: s.BootFiles, Boot: s.Boot, GokrazySocket: s.GokrazySocket, Events: s.Monitor.Events}).ServeHTTP),
		// Listing disks and the job is the first step of a destructive
		// action.
		need(admin, "GET /api/v1/install", s.install().Info),
		need(admin, "POST /api/v1/control/install", s.install().Start),
		// The configuration holds passwords and keys.
		need(admin, "GET /api/v1/config", s.Configs.Get),
		need(admin, "POST /api/v1/config/check", s.Configs.Check),
		need(admin, "POST /api/v1/config/plan", s.Configs.Plan),
		need(admin, "POST /api/v1/config/apply", s.Configs.Apply),
		need(admin, "POST /api/v1/config/confirm", s.Configs.Confirm),
		need(admin, "POST /api/v1/config/revert", s.Configs.Revert),
		need(admin, "POST /api/v1/config/rollback", s.Configs.Rollback),
		need(admin, "GET /api/v1/config/history", s.Configs.History),
		// A capture shows the traffic itself. It starts with a POST, so
		// that the cross-site checks apply: another site's page cannot
		// hold a port's capture with a browser's cached credentials.
		need(admin, "POST /api/v1/capture", (&capture.Handler{RunDir: s.Monitor.Collector.RunDir, Events: s.Monitor.Events, WriteTimeout: s.guard().lim.WriteTimeout}).ServeHTTP),
		{pattern: "GET /api/v1/capture", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", http.MethodPost)
			reply.Error(w, http.StatusMethodNotAllowed, "a capture starts with POST /api/v1/capture, the parameters in the query")
		})},
		need(admin, "GET /api/v1/accounts", s.handleAccounts),
		need(admin, "POST /api/v1/accounts", s.handleAddAccount),
		need(admin, "POST /api/v1/accounts/{name}", s.handleChangeAccount),
		need(admin, "DELETE /api/v1/accounts/{name}", s.handleRemoveAccount),
		need(admin, "GET /api/v1/tokens", s.handleTokens),
		need(admin, "POST /api/v1/tokens", s.handleCreateToken),
		need(admin, "DELETE /api/v1/tokens/{name}", s.handleRevokeToken),
		need(admin, "GET /api/v1/audit", s.handleAudit),
	}
}
