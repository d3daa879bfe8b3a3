// Package capture serves statusd's captures: POST /api/v1/capture asks
// forwarderd to capture a segment port at the XDP hook and streams the
// pcapng it writes to the client while the capture runs.
package capture

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/reply"
)

// Handler serves POST /api/v1/capture: a capture of a segment port at the
// XDP hook, streamed as pcapng from forwarderd (its socket in RunDir)
// while it runs. Whoever captures reads the traffic, so it is logged as
// an event (on Events) naming who.
type Handler struct {
	RunDir string
	Events *events.Log
	// WriteTimeout bounds the write of each piece of the stream, which
	// pushes the server's write deadline on.
	WriteTimeout time.Duration
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := forwarderapi.ParseCaptureRequest(r.URL.Query())
	if err != nil {
		captureError(w, err)
		return
	}
	body, err := forwarderapi.NewClient(h.RunDir, 0).Capture(r.Context(), req)
	if err != nil {
		captureError(w, err)
		return
	}
	defer body.Close()
	by := caller.Who(r)
	h.Events.Note(events.Info, events.KindControl, []string{"action", "capture", "port", req.Port, "by", by},
		fmt.Sprintf("capture of %s (%s, filter %q, up to %d s) by %s", req.Port, req.Direction, req.Filter, req.Seconds, by))
	start := time.Now().UTC()
	w.Header().Set("Content-Type", forwarderapi.CaptureContentType)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="ncpos-%s-%s.pcapng"`, req.Port, start.Format("20060102T150405Z")))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// The server's write timeout bounds an ordinary answer; a capture
	// runs as long as it was asked to, so each piece pushes it on.
	rc := http.NewResponseController(w)
	timeout := h.WriteTimeout
	buf := make([]byte, 64<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			rc.SetWriteDeadline(time.Now().Add(timeout))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client went away: closing body stops the capture
			}
			rc.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				h.Events.Note(events.Warning, events.KindControl, []string{"action", "capture", "port", req.Port},
					fmt.Sprintf("capture of %s cut short: %v", req.Port, err))
			}
			return
		}
	}
}

// captureError answers a refused capture with the status its kind calls
// for.
func captureError(w http.ResponseWriter, err error) {
	if ce, ok := forwarderapi.AsCaptureError(err); ok {
		reply.Error(w, ce.HTTPStatus(), ce.Message)
		return
	}
	reply.Error(w, http.StatusServiceUnavailable, "capture: "+err.Error())
}
