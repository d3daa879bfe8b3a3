package web

import (
	"net/http"
	"strconv"

	"github.com/ncpos/ncpos/ipc"
)

// defaultLogLines is how many lines per daemon GET /api/v1/logs gives
// without ?limit.
const defaultLogLines = 50

// handleLogs answers GET /api/v1/logs?daemon=D&limit=N: the recent lines
// of every daemon, or of D, oldest first.
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := defaultLogLines
	if v := q.Get("limit"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			http.Error(w, "limit: want a number of lines, 0 or more", http.StatusBadRequest)
			return
		}
	}
	out := []ipc.DaemonLog{}
	if s.Logs != nil {
		out = s.Logs.Daemons(n)
	}
	if d := q.Get("daemon"); d != "" {
		var one []ipc.DaemonLog
		for _, x := range out {
			if x.Daemon == d {
				one = append(one, x)
			}
		}
		if one == nil {
			http.Error(w, "daemon "+strconv.Quote(d)+": no lines from it", http.StatusNotFound)
			return
		}
		out = one
	}
	ipc.WriteJSON(w, map[string]any{"daemons": out})
}
