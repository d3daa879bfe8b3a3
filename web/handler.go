package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/logs"
	"github.com/ncpos/ncpos/web/accounts"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/configapi"
	"github.com/ncpos/ncpos/web/control"
	"github.com/ncpos/ncpos/web/metrics"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/selfinstall"
	"github.com/ncpos/ncpos/web/selftest"
	"github.com/ncpos/ncpos/web/snmp"
	"github.com/ncpos/ncpos/web/update"
)

//go:embed static
var staticFS embed.FS

var pageTmpl = template.Must(template.ParseFS(staticFS, "static/index.html"))

// Server is statusd's HTTP side: what it shows (Monitor), who may see and
// control it (Auth), and how control is carried out.
type Server struct {
	Monitor  *monitor.Monitor
	Auth     Auth
	Bypass   control.BypassController // nil: ask bypassd on its socket
	Rebooter control.Rebooter         // nil: reboot answers 503
	Syslog   *events.Sender           // optional, for its counters in /metrics
	Logs     *logs.Collector          // the daemons' recent log lines; nil: none
	// Installer offers install to internal disk; nil answers 503.
	Installer selfinstall.Installer
	// SelfTest runs the RFC 2544 self-test on request; nil answers 503.
	SelfTest *selftest.Jobs
	// Limits bound clients (zero fields: DefaultLimits).
	Limits Limits
	// GokrazySocket is where gokrazy serves its update endpoints ("":
	// gokrazy.Socket).
	GokrazySocket string
	// Updates checks updates before gokrazy writes them; nil: updates
	// are refused (the build trusts no keys).
	Updates *update.Gate
	// BootFiles hashes the files on the box's boot partition, for an
	// update to leave it alone when it would write the same; nil: the
	// box cannot tell (GET /api/v1/update/boot answers 503).
	BootFiles func() (map[string]string, error)
	// Boot drives the boot partition's slots for an update (the kernel,
	// test boot and switch steps); nil: the box cannot (503).
	Boot update.BootSlots
	// Names are host names the box is reached by besides its hostname and
	// addresses (status.names); other Host headers are refused.
	Names []string
	// TLS is the box's identity: with it, the API is served over HTTPS
	// only. TLSNote says why it is not kept (e.g. /perm unavailable).
	TLS     *boxtls.Identity
	TLSNote string
	// SNMP and SNMPNotifier are the SNMP agent and its notifications,
	// for their counters in /metrics; nil when SNMP is off.
	SNMP         *snmp.Agent
	SNMPNotifier *snmp.Notifier
	outMu        sync.Mutex // guards Syslog, SNMP and SNMPNotifier once serving
	// Configs is the box's configuration for the configuration API; nil
	// answers 503.
	Configs *configapi.Configs

	guardOnce sync.Once
	guards    *guards
}

// guards hold the state of the limits, shared by every listener and by
// /metrics.
type guards struct {
	lim    Limits
	conns  *connLimiter
	rate   *rateLimiter
	logins *loginGuard
	hosts  *hostCheck
	tlsLog handshakeLog
	audit  *auditTrail
}

func (s *Server) guard() *guards {
	s.guardOnce.Do(func() {
		lim := s.Limits.orDefault()
		now := time.Now
		if s.Monitor != nil {
			now = s.Monitor.Time
		}
		g := &guards{lim: lim, conns: newConnLimiter(lim), rate: newRateLimiter(lim, now),
			logins: newLoginGuard(lim, now), hosts: newHostCheck(s.Names), audit: &auditTrail{}}
		g.logins.onFail = func(client, user string, failures int, wait time.Duration) {
			msg := fmt.Sprintf("failed login from %s (user %q, %d in a row)", client, user, failures)
			if wait > 0 {
				msg += fmt.Sprintf(": its next login is checked in %v", wait)
			}
			s.event(events.Warning, events.KindLogin, []string{"client", client, "user", user, "failures", strconv.Itoa(failures)}, msg)
		}
		s.Auth.logins = g.logins
		s.Auth.events = func(sev events.Severity, fields []string, msg string) { s.event(sev, events.KindLogin, fields, msg) }
		s.Auth.refused = s.refused
		s.guards = g
	})
	return s.guards
}

// maxHistory is the most chart points an API answer carries per port.
const maxHistory = 600

// Handler returns the routes of API.md, each behind the role it needs.
func (s *Server) Handler() http.Handler {
	s.guard() // the login backoff the routes' Auth uses
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		var h http.Handler = rt.h
		switch {
		case rt.need == accounts.None:
		case rt.read:
			h = s.Auth.requireRead(h)
		default:
			if rt.audit() {
				h = s.audited(h)
			}
			h = sameOrigin(s.Auth.require(rt.need, h))
		}
		mux.Handle(rt.pattern, h)
	}
	return s.guarded(mux)
}

func (s *Server) control() *control.API {
	return &control.API{Bypass: s.Bypass, Rebooter: s.Rebooter, Configuration: s.Monitor.Configuration, RunDir: s.Monitor.Collector.RunDir, Events: s.Monitor.Events}
}

// event records an event of statusd's own.
func (s *Server) event(sev events.Severity, kind string, fields []string, msg string) {
	s.Monitor.Events.Note(sev, kind, fields, msg)
}

func (s *Server) install() *selfinstall.API {
	return &selfinstall.API{Installer: s.Installer, Events: s.Monitor.Events}
}

// guardCounts are what the limits refused, for /metrics.
func (s *Server) guardCounts() metrics.Guards {
	g := s.guard()
	return metrics.Guards{LoginFailures: g.logins.failures.Load(), LoginThrottled: g.logins.throttled.Load(),
		Rate: g.rate.limited.Load(), Host: g.hosts.refused.Load(), Connections: g.conns.refused.Load(),
		Evicted: g.conns.evicted.Load(), TLSHandshake: g.tlsLog.failed.Load()}
}

// guarded puts h behind what every listener of statusd applies first: the
// security headers, the Host check and the rate per client.
func (s *Server) guarded(h http.Handler) http.Handler {
	g := s.guard()
	return securityHeaders(g.hosts.middleware(g.rate.middleware(h)))
}

// apiIndex lists the API for GET /api/v1/ (API.md has the details).
var apiIndex = []string{
	"GET /api/v1/status?history=N", "GET /api/v1/system", "GET /api/v1/ports?history=N",
	"GET /api/v1/segments", "GET /api/v1/watchdog", "GET /api/v1/host", "GET /api/v1/events?limit=N", "GET /api/v1/logs?daemon=D&limit=N",
	"GET /api/v1/hardware", "GET /api/v1/selftest", "POST /api/v1/control/bypass", "POST /api/v1/control/reboot",
	"POST /api/v1/control/password", "PUT /api/v1/update/{manifest,root,kernel}", "GET /api/v1/update/boot", "POST /api/v1/update/{testboot,switch}", "GET /api/v1/install", "POST /api/v1/control/install", "GET /api/v1/selftest/job",
	"POST /api/v1/control/selftest", "GET /api/v1/config", "POST /api/v1/config/check", "POST /api/v1/config/plan",
	"POST /api/v1/config/apply", "POST /api/v1/config/confirm", "POST /api/v1/config/revert", "POST /api/v1/config/rollback",
	"GET /api/v1/config/history", "POST /api/v1/capture", "GET /metrics", "GET /api/v1/whoami",
	"GET /api/v1/accounts", "POST /api/v1/accounts", "POST /api/v1/accounts/{name}", "DELETE /api/v1/accounts/{name}",
	"GET /api/v1/tokens", "POST /api/v1/tokens", "DELETE /api/v1/tokens/{name}", "GET /api/v1/audit?limit=N",
}

// status is the latest snapshot with this request's view: the chart
// history it asked for (?history=N points per port), recent events
// (?limit=N) and the control information. The shared snapshot is never
// modified.
func (s *Server) status(r *http.Request) *api.Snapshot {
	latest := s.Monitor.Latest(r.Context())
	snap := *latest
	n, _ := strconv.Atoi(r.URL.Query().Get("history"))
	n = min(max(n, 0), maxHistory)
	snap.Ports = make([]api.Port, len(latest.Ports))
	for i, p := range latest.Ports {
		if n == 0 {
			p.History = nil
		} else if len(p.History) > n {
			p.History = p.History[len(p.History)-n:]
		}
		snap.Ports[i] = p
	}
	snap.Events = s.events(r)
	snap.Control = s.controlInfo(&snap)
	return &snap
}

func (s *Server) events(r *http.Request) []api.Event {
	out := []api.Event{}
	if s.Monitor.Events == nil {
		return out
	}
	n, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || n <= 0 {
		n = 50
	}
	for _, e := range s.Monitor.Events.Recent(n) {
		out = append(out, api.Event{Seq: e.Seq, Time: e.Time, Severity: e.Severity.String(), Kind: e.Kind, Message: e.Message, Fields: e.Fields})
	}
	return out
}

func (s *Server) controlInfo(snap *api.Snapshot) api.ControlInfo {
	ci := api.ControlInfo{AuthRead: s.Auth.authRead(), PasswordSource: s.Auth.Password.Source(), Users: []string{User}, Bypass: "available", Reboot: "available"}
	if s.TLS != nil {
		ci.TLS = &api.TLSInfo{Fingerprint: s.TLS.Fingerprint, Kept: s.TLSNote == "", Note: s.TLSNote}
	}
	if !s.Auth.Password.Set() {
		ci.Bypass, ci.Reboot = "no password set up", "no password set up"
		return ci
	}
	if s.Bypass == nil {
		for _, d := range snap.System.Daemons {
			if d.Name == "bypassd" && d.State != api.DaemonHealthy && d.State != api.DaemonUnhealthy {
				ci.Bypass = "bypassd " + d.State
			}
		}
	}
	if s.Rebooter == nil {
		ci.Reboot = "not available here"
	}
	return ci
}

// handlePage serves the dashboard with the current snapshot embedded, so
// the first paint needs no second request; app.js then polls
// /api/v1/status.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Set("history", strconv.Itoa(maxHistory))
	r.URL.RawQuery = q.Encode()
	snap := s.status(r)
	b, err := json.Marshal(snap) // escapes <, > and &: safe inside <script>
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	host := snap.System.Hostname
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, map[string]any{"Host": host, "Build": snap.System.BuildID, "Initial": template.JS(b)}); err != nil {
		http.Error(w, "rendering the dashboard: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// securityHeaders keeps the page from being framed or sniffed; it embeds
// everything it needs, so it asks for nothing from elsewhere.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			// Answers carry the box's state and may carry credentials'
			// results: no cache, shared or private, keeps them.
			w.Header().Set("Cache-Control", "no-store")
		}
		h.ServeHTTP(w, r)
	})
}
