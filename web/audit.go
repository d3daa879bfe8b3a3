package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
)

// auditSize is how many entries GET /api/v1/audit keeps; each is an
// event too, so syslog carries every one off the box.
const auditSize = 1000

// auditTrail keeps the latest audit entries, in RAM: the box writes no
// flash for them, and syslog keeps them for good.
type auditTrail struct {
	mu   sync.Mutex
	ring []api.AuditEntry
	next int
}

func (t *auditTrail) add(e api.AuditEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.ring) < auditSize {
		t.ring = append(t.ring, e)
		return
	}
	t.ring[t.next] = e
	t.next = (t.next + 1) % auditSize
}

// recent returns up to n entries, newest first.
func (t *auditTrail) recent(n int) []api.AuditEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]api.AuditEntry, 0, len(t.ring))
	for i := len(t.ring) - 1; i >= 0; i-- {
		out = append(out, t.ring[(t.next+i)%len(t.ring)])
	}
	if n > 0 && n < len(out) {
		out = out[:n]
	}
	return out
}

// audited records every request h serves: who, with which role, from
// where, what and how it ended.
func (s *Server) audited(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		id, _ := caller.IdentityOf(r)
		_, from := caller.Of(r)
		result := "ok"
		if sw.code >= 300 {
			result = "failed"
		}
		s.record(api.AuditEntry{Name: id.Name, Method: id.Method, Role: id.Role, From: from,
			Action: r.Method + " " + r.URL.Path, Status: sw.code, Result: result})
	})
}

// refused records a request that did not sign in, or whose role was too
// low.
func (s *Server) refused(r *http.Request, name, method, role string, code int, why string) {
	_, from := caller.Of(r)
	s.record(api.AuditEntry{Name: name, Method: method, Role: role, From: from,
		Action: r.Method + " " + r.URL.Path, Status: code, Result: "refused: " + why})
}

// record keeps e and makes it an event, for syslog and the traps.
func (s *Server) record(e api.AuditEntry) {
	e.Time = s.Monitor.Time().UTC()
	s.guard().audit.add(e)
	who := e.Name
	if who == "" {
		who = "?"
	}
	how := e.Method
	if e.Role != "" {
		how += ", " + e.Role
	}
	sev := events.Notice
	if strings.HasPrefix(e.Result, "refused") {
		sev = events.Warning
	}
	s.event(sev, events.KindAudit, []string{"by", who + "@" + e.From, "method", e.Method, "role", e.Role, "action", e.Action, "status", strconv.Itoa(e.Status)},
		fmt.Sprintf("%s (%s) from %s: %s: %d %s", who, how, e.From, e.Action, e.Status, e.Result))
}

func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	ipc.WriteJSON(w, map[string]any{"audit": s.guard().audit.recent(n)})
}

// statusWriter remembers the status code an answer was sent with; a
// streaming answer (a capture) still flushes through it.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes a flush on.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
