package watchdogapi

import (
	"context"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// Name is watchdogd's name: its socket's and its process's.
const Name = "watchdogd"

// Client asks watchdogd over its unix socket in a run directory.
type Client struct{ c *ipc.Client }

// NewClient is a client of the watchdogd whose socket is in runDir; each
// request gives up after timeout.
func NewClient(runDir string, timeout time.Duration) *Client {
	return &Client{c: ipc.NewClient(runDir, Name, timeout)}
}

// Status reads watchdogd's GET /status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.c.Status(ctx, &st)
	return st, err
}

// Reconfigure asks watchdogd to read its timings from the configuration
// again and take them in place.
func (c *Client) Reconfigure(ctx context.Context) (r Retimed, err error) {
	err = c.c.Post(ctx, "/reconfigure", nil, &r)
	return r, err
}
