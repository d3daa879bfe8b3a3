// Package ipc owns the protocol the appliance daemons speak to each other:
// HTTP on a unix socket /run/ncpos/<daemon>.sock with GET /healthz (200, or
// 503 with the reason as text), GET /status (JSON) and GET /metrics
// (Prometheus text). Keeping it in one place means no daemon opens another's
// socket by hand, and a test can point every client at a temporary folder.
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
	"strings"
	"time"
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

// Listen replaces a stale socket of the named daemon and listens on it.
func Listen(dir, daemon string) (net.Listener, error) {
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

// Health is what a daemon reports on /healthz.
type Health func() error

// Handler returns the standard daemon mux: /healthz from health, /status as
// the JSON encoding of whatever status returns, and /metrics when metrics is
// non-nil. Extra handlers can be added to the returned mux.
func Handler(health Health, status func() any, metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
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
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Serve serves h on the named daemon's socket until ctx is done.
func Serve(ctx context.Context, dir, daemon string, h http.Handler) error {
	ln, err := Listen(dir, daemon)
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
	return &Client{Daemon: daemon, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

func (c *Client) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Daemon+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.Daemon, path, err)
	}
	return resp, nil
}

// Health asks the daemon's /healthz; nil means healthy, otherwise the error
// carries the daemon's reason.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.get(ctx, "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s unhealthy: %s", c.Daemon, strings.TrimSpace(string(body)))
	}
	return nil
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
