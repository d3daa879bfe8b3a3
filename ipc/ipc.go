// Package ipc is the transport the appliance daemons talk to each
// other: HTTP on a unix socket /run/ncpos/<daemon>.sock with GET /livez
// (the daemon's health.Liveness as JSON: 200 when live, 503 when not), GET
// /health (its health.Report: liveness and conditions), GET /status (JSON,
// typed in each daemon's contract package: forwarder/forwarderapi,
// bypass/bypassapi, watchdog/watchdogapi) and GET /metrics (Prometheus
// text).
// Keeping it in one place means no daemon opens another's socket by hand
// or keeps its own copy of another's JSON, and a test can point every
// client at a temporary folder.
package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
)

// DefaultDir is where the daemons' sockets live on the appliance (a tmpfs).
const DefaultDir = "/run/ncpos"

// Dir returns the socket folder: $NCPOS_RUN_DIR when set (tests, the lab),
// DefaultDir otherwise.
func Dir() string {
	if d := os.Getenv("NCPOS_RUN_DIR"); d != "" {
		return d
	}
	return DefaultDir
}

// SocketPath is the socket of the named daemon in dir.
func SocketPath(dir, daemon string) string {
	return filepath.Join(dir, daemon+".sock")
}

// listen replaces a stale socket of the named daemon and listens on it.
func listen(dir, daemon string) (net.Listener, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ipc: creating %s: %w", dir, err)
	}
	path := SocketPath(dir, daemon)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("ipc: removing stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("ipc: %w", err)
	}
	return ln, nil
}

// Reporter is what a daemon says of itself on /livez and /health.
type Reporter func() health.Report

// Handler returns the standard daemon mux: /livez and /health from report,
// /status as the JSON encoding of whatever status returns, and /metrics
// when metrics is non-nil. Extra handlers can be added to the returned mux.
func Handler(report Reporter, status func() any, metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		l := report().Live
		if !l.Live {
			WriteJSONCode(w, http.StatusServiceUnavailable, l)
			return
		}
		WriteJSON(w, l)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, report())
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, status())
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w http.ResponseWriter, v any) { WriteJSONCode(w, http.StatusOK, v) }

// WriteJSONCode answers v as indented JSON with status code. v is
// encoded before anything is written, so that a value that cannot be
// encoded is answered with a 500 that says why; an error writing the
// answer (the client gone) has no one left to tell.
func WriteJSONCode(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// Serve serves h on the named daemon's socket until ctx is done.
func Serve(ctx context.Context, dir, daemon string, h http.Handler) error {
	ln, err := listen(dir, daemon)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ipc: serving %s: %w", daemon, err)
	}
	return nil
}

// Client talks to one daemon over its socket.
type Client struct {
	Daemon string
	hc     *http.Client
	stream *http.Client // without a timeout, for Stream
}

// NewClient returns a client for the named daemon's socket in dir. Every
// request is bounded by timeout, so a hung daemon shows as a failed check
// rather than a hung caller.
func NewClient(dir, daemon string, timeout time.Duration) *Client {
	path := SocketPath(dir, daemon)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}
	return &Client{Daemon: daemon, hc: &http.Client{Transport: tr, Timeout: timeout}, stream: &http.Client{Transport: tr}}
}

// Stream GETs path and returns the response whatever its status, for an
// answer that streams as long as it runs: no timeout but ctx's.
func (c *Client) Stream(ctx context.Context, path string) (*http.Response, error) {
	return c.getWith(ctx, c.stream, path)
}

func (c *Client) get(ctx context.Context, path string) (*http.Response, error) {
	return c.getWith(ctx, c.hc, path)
}

func (c *Client) getWith(ctx context.Context, hc *http.Client, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Daemon+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.Daemon, path, err)
	}
	return resp, nil
}

// NotLiveError is a daemon that answered /livez with a Liveness that is
// not live.
type NotLiveError struct {
	Daemon   string
	Liveness health.Liveness
}

func (e *NotLiveError) Error() string {
	return fmt.Sprintf("%s not live: %s", e.Daemon, e.Liveness)
}

// Live asks the daemon's /livez: nil when it answered and is live, a
// *NotLiveError when it answered that it is not, another error when it did
// not answer (gone, hung, or an answer that is no Liveness).
func (c *Client) Live(ctx context.Context) error {
	resp, err := c.get(ctx, "/livez")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var l health.Liveness
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&l); err != nil {
		return fmt.Errorf("%s /livez: %s: decoding: %w", c.Daemon, resp.Status, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK && l.Live:
		return nil
	case resp.StatusCode == http.StatusServiceUnavailable && !l.Live:
		return &NotLiveError{Daemon: c.Daemon, Liveness: l}
	}
	return fmt.Errorf("%s /livez: %s with live=%v", c.Daemon, resp.Status, l.Live)
}

// Report fetches the daemon's /health.
func (c *Client) Report(ctx context.Context) (health.Report, error) {
	var r health.Report
	resp, err := c.get(ctx, "/health")
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("%s /health: %s", c.Daemon, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&r); err != nil {
		return r, fmt.Errorf("%s /health: decoding: %w", c.Daemon, err)
	}
	return r, nil
}

// Status decodes the daemon's /status JSON into v.
func (c *Client) Status(ctx context.Context, v any) error {
	resp, err := c.get(ctx, "/status")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s /status: %s", c.Daemon, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s /status: decoding: %w", c.Daemon, err)
	}
	return nil
}

// Metrics returns the daemon's Prometheus text.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	resp, err := c.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: %s", c.Daemon, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// AlwaysLive is a Reporter for a daemon with no loop or engine of its own
// to watch: answering at all is its liveness, and it reports no
// conditions.
func AlwaysLive(daemon string) Reporter {
	return func() health.Report {
		return health.Report{Daemon: daemon, Live: health.Live(time.Now()), Conditions: []health.Condition{}}
	}
}

// ExitStopped is the exit status of a daemon stopped by SIGTERM (128 + 15,
// as a shell reports it). gokrazy stops supervising a program that exits
// with 0 and starts again one that exits otherwise, unless it is shutting
// down: so a daemon restarted by hand, or by anything but a shutdown,
// comes back, instead of leaving the box without it until the watchdog
// resets it.
const ExitStopped = 143
