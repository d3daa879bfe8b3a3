package api

import (
	"context"
	"io"
	"net/http"
)

// Capture starts a capture on the box (POST /api/v1/capture) and returns
// its pcapng stream, which ends when the capture does; closing it, or
// ending ctx, stops the capture. A refusal is a *StatusError: 400 for a
// bad parameter or a filter that does not compile, 404 for a port that
// is not a segment port, 409 for a port already being captured.
func (c *Client) Capture(ctx context.Context, r CaptureRequest) (io.ReadCloser, error) {
	path := "api/v1/capture?" + r.Query().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path, nil)
	if err != nil {
		return nil, err
	}
	c.signIn(req)
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return nil, &StatusError{Method: req.Method, Path: "api/v1/capture", Code: resp.StatusCode, Status: resp.Status, Message: Message(b), Body: b}
}
