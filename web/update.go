package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ncpos/ncpos/events"
)

// Updates pass through statusd: gokrazy serves its update endpoints only
// on its socket, and statusd hands them an operator's request after
// checking the password and the origin, with limits of its own.
const (
	// UpdateTimeout bounds one update request: a root image over a slow
	// link to a remote site takes minutes, not hours.
	UpdateTimeout = 30 * time.Minute
	// MaxUpdateBytes bounds one partition image.
	MaxUpdateBytes = 1 << 30
)

// updateSteps are the gokrazy endpoints an update uses, by the name in
// statusd's route and the method it takes.
var updateSteps = map[string]struct{ method, path string }{
	"root":     {http.MethodPut, "/update/root"},      // the inactive root partition; answers the SHA-256 written
	"boot":     {http.MethodPut, "/update/boot"},      // the boot partition
	"testboot": {http.MethodPost, "/update/testboot"}, // boot the inactive root once
	"switch":   {http.MethodPost, "/update/switch"},   // boot the inactive root from now on
}

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request) {
	step, ok := updateSteps[r.PathValue("step")]
	if !ok {
		apiError(w, http.StatusNotFound, fmt.Sprintf("no update step %q, want root, boot, testboot or switch", r.PathValue("step")))
		return
	}
	if r.Method != step.method {
		w.Header().Set("Allow", step.method)
		apiError(w, http.StatusMethodNotAllowed, "update step "+r.PathValue("step")+" takes "+step.method)
		return
	}
	if r.ContentLength > MaxUpdateBytes {
		apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("update body of %d bytes, want at most %d", r.ContentLength, MaxUpdateBytes))
		return
	}
	// Longer than the server's limits, which are for the dashboard.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(UpdateTimeout))
	rc.SetWriteDeadline(time.Now().Add(UpdateTimeout))
	body := http.MaxBytesReader(w, r.Body, MaxUpdateBytes)
	req, err := http.NewRequestWithContext(r.Context(), step.method, "http://gokrazy"+step.path, body)
	if err != nil {
		apiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	req.ContentLength = r.ContentLength
	by := who(r)
	start := time.Now()
	resp, err := gokrazyClient(s.GokrazySocket, UpdateTimeout).Do(req)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("update body larger than %d bytes", MaxUpdateBytes))
		return
	case err != nil:
		s.event(events.Warning, events.KindControl, []string{"action", "update", "step", r.PathValue("step"), "by", by},
			fmt.Sprintf("update %s by %s failed: %v", r.PathValue("step"), by, err))
		apiError(w, http.StatusBadGateway, "passing the update to gokrazy: "+err.Error())
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := fmt.Sprintf("update %s by %s: %s", r.PathValue("step"), by, resp.Status)
	if r.ContentLength > 0 {
		msg += fmt.Sprintf(", %d bytes in %v", r.ContentLength, time.Since(start).Round(time.Millisecond))
	}
	sev := events.Notice
	if resp.StatusCode != http.StatusOK {
		sev = events.Warning
		msg += ": " + strings.TrimSpace(string(answer))
	}
	s.event(sev, events.KindControl, []string{"action", "update", "step", r.PathValue("step"), "by", by}, msg)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}
