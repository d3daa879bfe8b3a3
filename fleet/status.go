package fleet

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/web/api"
)

// Report is what one box said when asked, or why it could not be asked.
type Report struct {
	Box       Box
	Reachable bool
	Error     string `json:",omitempty"` // why not reachable, or what it answered instead

	Build     string
	Uptime    time.Duration
	Health    string   // the summary: ok, bypass or degraded
	Problems  []string `json:",omitempty"`
	Segments  []SegmentReport
	LastReset string // why it last started, from watchdogd
}

// SegmentReport is a segment's relay and forwarding.
type SegmentReport struct {
	Name       string
	Relay      string // normal, bypass, disconnect, unknown, or "" without a relay
	Forwarding bool
}

// Asker reaches boxes: TLS gives the client configuration that checks a
// box's key (a boxtls.Pin's), Password its control password ("" when
// none is recorded; boxes with auth_read refuse then).
type Asker struct {
	TLS      func(Box) *tls.Config
	Password func(Box) string
	Timeout  time.Duration // per box; 0: 10 s
}

// Check asks one box for its status.
func (a *Asker) Check(ctx context.Context, b Box) (Report, *tls.ConnectionState) {
	r := Report{Box: b}
	if b.Address == "" {
		r.Error = "no address yet: no host command has reached it since it was installed (ncpos fleet add sets one)"
		return r, nil
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := a.client(b)
	var s api.Snapshot
	cs, err := c.Call(ctx, http.MethodGet, "api/v1/status", nil, &s)
	var se *api.StatusError
	switch {
	case errors.As(err, &se):
		r.Error = fmt.Sprintf("GET /api/v1/status: %s: %s", se.Status, firstLine([]byte(se.Message)))
		return r, cs
	case err != nil && cs == nil:
		r.Error = err.Error()
		return r, nil
	case err != nil || s.System == nil:
		r.Error = fmt.Sprintf("GET /api/v1/status: not an ncpos status (%v)", err)
		return r, cs
	}
	r.Reachable = true
	r.Build = s.System.BuildID
	r.Uptime = time.Duration(s.System.UptimeSeconds * float64(time.Second))
	r.Health, r.Problems = s.Summary.State, s.Summary.Problems
	for _, g := range s.Segments {
		sr := SegmentReport{Name: g.Name, Forwarding: g.Forwarding != nil && g.Forwarding.Healthy}
		if g.BypassPair != "" {
			sr.Relay = "unknown"
			if g.Bypass != nil {
				sr.Relay = g.Bypass.State
			}
		}
		r.Segments = append(r.Segments, sr)
	}
	if p := s.System.Watchdog.Petter; p != nil {
		r.LastReset = p.LastReset.Text
	}
	return r, cs
}

// Status asks every box at once and records in the inventory what each
// reachable box proved: its key, its certificate, its build.
func (a *Asker) Status(ctx context.Context, inv *Inventory) ([]Report, error) {
	boxes, err := inv.Boxes()
	if err != nil {
		return nil, err
	}
	out := make([]Report, len(boxes))
	var wg sync.WaitGroup
	for i, b := range boxes {
		wg.Go(func() {
			r, cs := a.Check(ctx, b)
			if r.Reachable {
				err := inv.Update(b.Name, func(x *Box) { Saw(x, r.Build, cs, time.Now()) })
				if err != nil && r.Error == "" {
					r.Error = "recording it: " + err.Error()
				}
			}
			out[i] = r
		})
	}
	wg.Wait()
	return out, nil
}

// Saw records that a box answered with build over cs.
func Saw(b *Box, build string, cs *tls.ConnectionState, now time.Time) {
	b.Seen = now
	if build != "" {
		b.Build = build
	}
	if cs != nil && len(cs.PeerCertificates) > 0 {
		der := cs.PeerCertificates[0].Raw
		if fp, err := boxtls.Fingerprint(der); err == nil {
			b.Fingerprint = fp
			b.Certificate = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		}
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
