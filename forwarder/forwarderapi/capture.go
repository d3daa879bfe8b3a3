package forwarderapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Capture directions: frames entering the port, frames leaving it (those
// that entered its peer), or both.
const (
	CaptureIn   = "in"
	CaptureOut  = "out"
	CaptureBoth = "both"
)

// Capture limits.
const (
	CaptureMaxSnaplen     = 16384 // bytes of a frame kept at most: a jumbo frame whole
	CaptureDefaultSeconds = 60
	CaptureMaxSeconds     = 3600
	CaptureMaxFrames      = 10_000_000
	CaptureMaxFilter      = 1024 // bytes of filter text
)

// CaptureRequest is a capture of one segment port at the XDP hook, as
// GET /capture (forwarderd) and GET /api/v1/capture (the box's API) take
// it in their query.
type CaptureRequest struct {
	Port      string // front-panel label, say LAN1
	Direction string // CaptureIn (default), CaptureOut or CaptureBoth
	Filter    string // pcap-filter(7) syntax; empty keeps every frame
	Seconds   int    // how long it runs; 0 is CaptureDefaultSeconds
	Frames    int    // stops after this many frames; 0 is no limit
	Snaplen   int    // bytes of each frame kept; 0 is CaptureMaxSnaplen
}

// Query encodes r for a URL.
func (r CaptureRequest) Query() url.Values {
	q := url.Values{"port": {r.Port}}
	if r.Direction != "" {
		q.Set("direction", r.Direction)
	}
	if r.Filter != "" {
		q.Set("filter", r.Filter)
	}
	for k, v := range map[string]int{"seconds": r.Seconds, "frames": r.Frames, "snaplen": r.Snaplen} {
		if v != 0 {
			q.Set(k, strconv.Itoa(v))
		}
	}
	return q
}

// ParseCaptureRequest reads a request from a query, with its defaults
// filled in; a *CaptureError of kind CaptureBadRequest names what is wrong.
// The port and the filter are checked by forwarderd, which knows them.
func ParseCaptureRequest(q url.Values) (CaptureRequest, error) {
	bad := func(format string, a ...any) (CaptureRequest, error) {
		return CaptureRequest{}, &CaptureError{Kind: CaptureBadRequest, Message: fmt.Sprintf(format, a...)}
	}
	for k := range q {
		switch k {
		case "port", "direction", "filter", "seconds", "frames", "snaplen":
			if len(q[k]) > 1 {
				return bad("%s given %d times", k, len(q[k]))
			}
		default:
			return bad("unknown parameter %q: want port, direction, filter, seconds, frames or snaplen", k)
		}
	}
	r := CaptureRequest{Port: q.Get("port"), Direction: q.Get("direction"), Filter: q.Get("filter")}
	if r.Port == "" {
		return bad("port is missing: name a segment port, say port=LAN1")
	}
	switch r.Direction {
	case "":
		r.Direction = CaptureIn
	case CaptureIn, CaptureOut, CaptureBoth:
	default:
		return bad("direction %q: want in, out or both", r.Direction)
	}
	if len(r.Filter) > CaptureMaxFilter {
		return bad("filter of %d bytes: at most %d", len(r.Filter), CaptureMaxFilter)
	}
	ints := []struct {
		name     string
		to       *int
		min, max int
		def      int
	}{
		{"seconds", &r.Seconds, 1, CaptureMaxSeconds, CaptureDefaultSeconds},
		{"frames", &r.Frames, 1, CaptureMaxFrames, 0},
		{"snaplen", &r.Snaplen, 14, CaptureMaxSnaplen, CaptureMaxSnaplen},
	}
	for _, p := range ints {
		s := q.Get(p.name)
		if s == "" {
			*p.to = p.def
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < p.min || n > p.max {
			return bad("%s %q: want a whole number from %d to %d", p.name, s, p.min, p.max)
		}
		*p.to = n
	}
	return r, nil
}

// CaptureErrorKind says why a capture was refused; callers decide on it,
// never on the message.
type CaptureErrorKind string

const (
	CaptureBadRequest  CaptureErrorKind = "bad_request"  // a parameter is wrong
	CaptureBadFilter   CaptureErrorKind = "bad_filter"   // the filter does not compile
	CaptureUnknownPort CaptureErrorKind = "unknown_port" // not a segment port of this box
	CaptureBusy        CaptureErrorKind = "busy"         // a capture already runs on the port
	CaptureUnavailable CaptureErrorKind = "unavailable"  // the datapath cannot capture now
)

// CaptureError is a refused capture, as forwarderd answers it in JSON.
type CaptureError struct {
	Kind    CaptureErrorKind `json:"kind"`
	Message string           `json:"error"`
}

func (e *CaptureError) Error() string { return e.Message }

// HTTPStatus is the status a refusal of this kind is answered with.
func (e *CaptureError) HTTPStatus() int {
	switch e.Kind {
	case CaptureBadRequest, CaptureBadFilter:
		return http.StatusBadRequest
	case CaptureUnknownPort:
		return http.StatusNotFound
	case CaptureBusy:
		return http.StatusConflict
	}
	return http.StatusServiceUnavailable
}

// CaptureContentType is the media type of a capture's stream.
const CaptureContentType = "application/x-pcapng"

// Capture starts a capture on forwarderd (GET /capture) and returns its
// pcapng stream, which ends when the capture does; closing it, or ending
// ctx, stops the capture. A refusal is a *CaptureError.
func (c *Client) Capture(ctx context.Context, r CaptureRequest) (io.ReadCloser, error) {
	resp, err := c.c.Stream(ctx, "/capture?"+r.Query().Encode())
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	var ce CaptureError
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ce); err != nil || ce.Kind == "" {
		return nil, fmt.Errorf("%s /capture: %s", Name, resp.Status)
	}
	return nil, &ce
}

// AsCaptureError returns err's *CaptureError, if it is one.
func AsCaptureError(err error) (*CaptureError, bool) {
	var ce *CaptureError
	ok := errors.As(err, &ce)
	return ce, ok
}
