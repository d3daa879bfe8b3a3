package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
)

// StatusError is a daemon's answer other than 2xx to a request; Message is
// the body's text (the daemon's reason), so callers can relay both.
type StatusError struct {
	Daemon  string
	Path    string
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Daemon, e.Path, e.Code, http.StatusText(e.Code), e.Message)
}

// Post sends in as JSON to path on the daemon's socket and decodes a 2xx
// JSON answer into out (when out is non-nil). Any other answer is a
// *StatusError. Daemons use it for requests that change state, e.g.
// statusd asking bypassd for an override.
func (c *Client) Post(ctx context.Context, path string, in, out any) error {
	return c.Do(ctx, http.MethodPost, path, in, out)
}

// Delete sends DELETE path (e.g. bypassd's "end the override") and decodes
// a 2xx JSON answer into out when out is non-nil.
func (c *Client) Delete(ctx context.Context, path string, out any) error {
	return c.Do(ctx, http.MethodDelete, path, nil, out)
}

// Do sends method to path with in as its JSON body (none when in is nil)
// and decodes a 2xx JSON answer into out (when non-nil); any other answer
// is a *StatusError.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encoding request: %w", c.Daemon, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.Daemon+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", c.Daemon, method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &StatusError{Daemon: c.Daemon, Path: path, Code: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s %s %s: decoding answer: %w", c.Daemon, method, path, err)
	}
	return nil
}

// NotRunning reports whether err means nobody serves the daemon's socket
// (no socket file, or nobody accepting on it), as opposed to a daemon that
// answered badly or too slowly.
func NotRunning(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}
