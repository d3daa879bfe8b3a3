// Package update updates a running appliance over the network (OTA): the
// new root goes to the inactive root partition through gokrazy's update
// endpoints, the new build is test-booted once, and only made permanent
// when it comes up healthy; otherwise the appliance returns to the build it
// had.
package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

// Client talks to one appliance: statusd for status, gokrazy for updates.
type Client struct {
	StatusURL  string // e.g. http://box/ (statusd)
	GokrazyURL string // e.g. http://box:8080/ (gokrazy's web UI and update endpoints)
	Password   string // gokrazy's HTTP password
	HTTP       *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	// No keep-alive: the appliance reboots during an update, and a request
	// on a connection from before the reboot would fail with EOF.
	return &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
}

// System reads statusd's /api/v1/system.
func (c *Client) System(ctx context.Context) (*api.System, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.StatusURL+"api/v1/system", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%sapi/v1/system: %s", c.StatusURL, resp.Status)
	}
	var s api.System
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("%sapi/v1/system: %w", c.StatusURL, err)
	}
	return &s, nil
}

// gokrazy sends an authenticated request to one of gokrazy's endpoints.
func (c *Client) gokrazy(ctx context.Context, method, path string, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.GokrazyURL+strings.TrimPrefix(path, "/"), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.SetBasicAuth("gokrazy", c.Password)
	resp, err := c.http().Do(req)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// put streams data to a gokrazy update endpoint and checks the SHA-256
// gokrazy computed of what it wrote.
func (c *Client) put(ctx context.Context, path string, data []byte) error {
	got, err := c.gokrazy(ctx, "PUT", path, data)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]); strings.TrimSpace(got) != want {
		return fmt.Errorf("PUT %s: appliance wrote data with SHA-256 %q, sent %s", path, got, want)
	}
	return nil
}
