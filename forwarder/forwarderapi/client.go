package forwarderapi

import (
	"context"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
)

// Name is forwarderd's name: its socket's and its process's.
const Name = "forwarderd"

// Client asks forwarderd over its unix socket in a run directory.
type Client struct{ c *ipc.Client }

// NewClient is a client of the forwarderd whose socket is in runDir; each
// request gives up after timeout.
func NewClient(runDir string, timeout time.Duration) *Client {
	return &Client{c: ipc.NewClient(runDir, Name, timeout)}
}

// Status reads forwarderd's GET /status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.c.Status(ctx, &st)
	return st, err
}

// Health reads forwarderd's GET /health: its liveness and the segments'
// conditions.
func (c *Client) Health(ctx context.Context) (health.Report, error) {
	return c.c.Report(ctx)
}

// Live asks forwarderd's GET /livez; nil when it is live.
func (c *Client) Live(ctx context.Context) error { return c.c.Live(ctx) }

// Metrics reads forwarderd's GET /metrics (Prometheus text).
func (c *Client) Metrics(ctx context.Context) ([]byte, error) { return c.c.Metrics(ctx) }

// Reconfigure asks forwarderd to read the configuration again and take it
// in place (POST /reconfigure).
func (c *Client) Reconfigure(ctx context.Context) (Reconfigured, error) {
	var r Reconfigured
	err := c.c.Post(ctx, "/reconfigure", nil, &r)
	return r, err
}
