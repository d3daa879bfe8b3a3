package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/update/signature"
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
	// maxManifestBytes bounds a build's signed manifest.
	maxManifestBytes = 64 << 10
)

// updateSteps are the gokrazy endpoints an update uses, by the name in
// statusd's route and the method it takes.
var updateSteps = map[string]struct{ method, path string }{
	"manifest": {http.MethodPut, ""},                  // the build's signed manifest, checked here
	"root":     {http.MethodPut, "/update/root"},      // the inactive root partition; answers the SHA-256 written
	"boot":     {http.MethodPut, "/update/boot"},      // the boot partition
	"testboot": {http.MethodPost, "/update/testboot"}, // boot the inactive root once
	"switch":   {http.MethodPost, "/update/switch"},   // boot the inactive root from now on
}

// handleBootFiles answers the SHA-256 of every file on the boot partition.
func (s *Server) handleBootFiles(w http.ResponseWriter) {
	if s.BootFiles == nil {
		apiError(w, http.StatusServiceUnavailable, "this box cannot read its boot partition")
		return
	}
	files, err := s.BootFiles()
	if err != nil {
		apiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"files": files})
}

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request) {
	step, ok := updateSteps[r.PathValue("step")]
	if !ok {
		apiError(w, http.StatusNotFound, fmt.Sprintf("no update step %q, want manifest, root, boot, testboot or switch", r.PathValue("step")))
		return
	}
	if r.PathValue("step") == "boot" && r.Method == http.MethodGet {
		s.handleBootFiles(w)
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
	name, by := r.PathValue("step"), who(r)
	refuse := func(code int, err error) {
		s.event(events.Warning, events.KindControl, []string{"action", "update", "step", name, "by", by},
			fmt.Sprintf("update %s by %s refused: %v", name, by, err))
		apiError(w, code, err.Error())
	}
	if s.Updates == nil {
		refuse(http.StatusServiceUnavailable, errors.New("this build trusts no update keys: it takes no updates over the network"))
		return
	}
	// Longer than the server's limits, which are for the dashboard.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(UpdateTimeout))
	rc.SetWriteDeadline(time.Now().Add(UpdateTimeout))
	var body io.Reader = http.MaxBytesReader(w, r.Body, MaxUpdateBytes)
	switch name {
	case "manifest":
		b, err := io.ReadAll(io.LimitReader(r.Body, maxManifestBytes+1))
		if err == nil && len(b) > maxManifestBytes {
			err = fmt.Errorf("manifest larger than %d bytes", maxManifestBytes)
		}
		if err != nil {
			refuse(http.StatusBadRequest, err)
			return
		}
		check := r.URL.Query().Get("check") == "1"
		m, err := s.Updates.accept(b, r.URL.Query().Get("downgrade") == "1", check)
		switch {
		case errors.Is(err, signature.ErrUnsigned), errors.Is(err, signature.ErrUntrusted), errors.Is(err, signature.ErrForged):
			refuse(http.StatusForbidden, err)
			return
		case errors.Is(err, signature.ErrDowngrade), errors.Is(err, signature.ErrSameBuild):
			refuse(http.StatusConflict, err)
			return
		case err != nil:
			refuse(http.StatusBadRequest, err)
			return
		}
		msg := fmt.Sprintf("manifest of build %s (built %s, root %d bytes, kernel %d bytes) accepted", m.BuildID, m.Built.UTC().Format(time.RFC3339), m.Root.Size, m.Kernel.Size)
		if check {
			msg = strings.Replace(msg, "accepted", "would be accepted (checked only)", 1)
		}
		s.event(events.Notice, events.KindControl, []string{"action", "update", "step", name, "by", by}, "update "+msg+" from "+by)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, msg)
		return
	case "root":
		// Received in full and checked before gokrazy writes a byte:
		// a cut-off or altered upload leaves the inactive root as it
		// was.
		want, err := s.Updates.root()
		if err != nil {
			refuse(http.StatusConflict, err)
			return
		}
		if r.ContentLength < 0 {
			refuse(http.StatusLengthRequired, errors.New("root sent without a Content-Length: the signed build's is needed up front"))
			return
		}
		if r.ContentLength != want.Size {
			refuse(http.StatusBadRequest, fmt.Errorf("root of %d bytes announced, the signed build's is %d", r.ContentLength, want.Size))
			return
		}
		if err := s.Updates.roomFor(want.Size); err != nil {
			refuse(http.StatusInsufficientStorage, err)
			return
		}
		b := make([]byte, want.Size)
		if _, err := io.ReadFull(body, b); err != nil {
			refuse(http.StatusBadRequest, fmt.Errorf("receiving the root: %w (nothing written)", err))
			return
		}
		if err := want.Check("root", b); err != nil {
			refuse(http.StatusForbidden, fmt.Errorf("%w (nothing written)", err))
			return
		}
		body = bytes.NewReader(b)
	case "boot", "testboot":
		if err := s.Updates.afterRoot(name); err != nil {
			refuse(http.StatusConflict, err)
			return
		}
	}
	req, err := http.NewRequestWithContext(r.Context(), step.method, "http://gokrazy"+step.path, body)
	if err != nil {
		apiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	req.ContentLength = r.ContentLength
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
	if name == "root" {
		s.Updates.rootWritten(resp.StatusCode == http.StatusOK)
	}
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
