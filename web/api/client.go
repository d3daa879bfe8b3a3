package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client talks to one box's statusd over HTTPS: the host's update and
// fleet commands and the QEMU tests read and control a box through it.
// Deadlines come from the context.
type Client struct {
	URL      string // statusd, ending in a slash: https://box/
	Password string // the account's password; "" sends none
	User     string // the account ("": ncpos, whose password is the box's control password)
	// Token is an API token, sent as a Bearer token instead of the
	// account and password.
	Token string
	// HTTP is the client to use; nil: one without keep-alive (a box
	// that rebooted since would answer a kept connection with EOF) that
	// checks the box's key with TLS.
	HTTP *http.Client
	TLS  *tls.Config // for the default HTTP client, e.g. a boxtls.Pin's
}

// maxAnswer bounds what a JSON answer may take; /api/v1/status with its
// charts and events is the largest.
const maxAnswer = 16 << 20

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: c.TLS}}
}

// Get reads path (e.g. "api/v1/system") into v.
func (c *Client) Get(ctx context.Context, path string, v any) error {
	_, err := c.Call(ctx, http.MethodGet, path, nil, v)
	return err
}

// Post sends body as JSON to path and reads the answer into v (nil:
// discarded).
func (c *Client) Post(ctx context.Context, path string, body, v any) error {
	_, err := c.Call(ctx, http.MethodPost, path, body, v)
	return err
}

// Call sends a request, with body as JSON unless it is nil, and reads a
// 2xx answer's JSON into v (nil: discarded). A refusal is a *StatusError.
// It returns the connection's TLS state whenever the box answered, so
// that a caller can record the key it proved.
func (c *Client) Call(ctx context.Context, method, path string, body, v any) (*tls.ConnectionState, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	cs, b, err := c.exchange(req, path, maxAnswer)
	if err != nil {
		return cs, err
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			return cs, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return cs, nil
}

// Send sends size bytes of body as they are (an update's image) and
// returns the answer's text; a refusal is a *StatusError.
func (c *Client) Send(ctx context.Context, method, path string, body io.Reader, size int64) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, body)
	if err != nil {
		return "", err
	}
	req.ContentLength = size
	_, b, err := c.exchange(req, path, 64<<10)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = fmt.Errorf("%s %s: %w", method, path, err)
	}
	return string(b), err
}

// exchange sends req with the password and reads up to limit bytes of
// the answer; an answer other than 2xx is a *StatusError. The TLS state
// is there whenever the box answered; the transport's errors come as
// they are.
func (c *Client) exchange(req *http.Request, path string, limit int64) (*tls.ConnectionState, []byte, error) {
	c.signIn(req)
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return resp.TLS, nil, fmt.Errorf("%s %s: reading the answer: %w", req.Method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.TLS, nil, &StatusError{Method: req.Method, Path: path, Code: resp.StatusCode, Status: resp.Status, Message: Message(b), Body: b}
	}
	return resp.TLS, b, nil
}

// signIn puts the client's token or account and password on req.
func (c *Client) signIn(req *http.Request) {
	switch {
	case c.Token != "":
		req.Header.Set("Authorization", "Bearer "+c.Token)
	case c.Password != "":
		user := c.User
		if user == "" {
			user = BuiltinAccount
		}
		req.SetBasicAuth(user, c.Password)
	}
}

// StatusError is a request the box refused: its status and what it said.
type StatusError struct {
	Method, Path string
	Code         int
	Status       string
	Message      string
	Body         []byte // the whole answer, for refusals that say more than Message
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, e.Status, e.Message)
}

// Message is why a refusal says it refused: statusd says so as
// {"error": "..."}, gokrazy in plain text.
func Message(b []byte) string {
	var e struct{ Error string }
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(b))
}
