package forwarder

import (
	"bufio"
	"log"
	"net/http"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc"
)

// CaptureHandler serves GET /capture on forwarderd's socket: the query of
// forwarderapi.CaptureRequest, answered with the capture's pcapng stream,
// or with a forwarderapi.CaptureError in JSON when it is refused.
func (f *Forwarder) CaptureHandler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := forwarderapi.ParseCaptureRequest(r.URL.Query())
		if err != nil {
			writeCaptureError(w, err)
			return
		}
		c, err := f.StartCapture(req)
		if err != nil {
			writeCaptureError(w, err)
			return
		}
		defer func() {
			if err := c.Close(); err != nil {
				log.Printf("capture of %s: stopping: %v", req.Port, err)
			}
		}()
		log.Printf("capture of %s (%s, filter %q) started", req.Port, req.Direction, req.Filter)
		w.Header().Set("Content-Type", forwarderapi.CaptureContentType)
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		// Blocks gather here and leave together whenever the ring is
		// drained: a write to the socket per frame would cost more
		// than the frame.
		bw := bufio.NewWriterSize(w, 256<<10)
		sum, err := c.Stream(r.Context(), bw, func() {
			if bw.Flush() == nil {
				rc.Flush()
			}
		})
		if err != nil {
			log.Printf("capture of %s: %v", req.Port, err)
		}
		n := sum.Counts
		log.Printf("capture of %s ended (%s): %d frames written, %d matched, %d over the rate cap, %d lost to a full ring",
			req.Port, sum.Why, sum.Written, n.Matched, n.OverRate, n.RingFull)
	}
}

func writeCaptureError(w http.ResponseWriter, err error) {
	ce, ok := forwarderapi.AsCaptureError(err)
	if !ok {
		ce = &forwarderapi.CaptureError{Kind: forwarderapi.CaptureUnavailable, Message: err.Error()}
	}
	ipc.WriteJSONCode(w, ce.HTTPStatus(), ce)
}
