package bypassapi

import (
	"context"
	"net/url"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// Name is bypassd's name: its socket's and its process's.
const Name = "bypassd"

// Client asks bypassd over its unix socket in a run directory: its
// status, and the control endpoints that answer with it.
type Client struct{ c *ipc.Client }

// NewClient is a client of the bypassd whose socket is in runDir; each
// request gives up after timeout.
func NewClient(runDir string, timeout time.Duration) *Client {
	return &Client{c: ipc.NewClient(runDir, Name, timeout)}
}

// Override sets a manual override.
func (c *Client) Override(ctx context.Context, req OverrideRequest) (st Status, err error) {
	err = c.c.Post(ctx, "/override", req, &st)
	return st, err
}

// ClearOverride returns pair ("" for all) to automatic control.
func (c *Client) ClearOverride(ctx context.Context, pair, by string) (st Status, err error) {
	err = c.c.Delete(ctx, "/override?"+url.Values{"pair": {pair}, "by": {by}}.Encode(), &st)
	return st, err
}

// Plan puts every pair into bypass before a shutdown, reboot or update,
// returning once bypassd has set and read back the relays.
func (c *Client) Plan(ctx context.Context, kind, reason string) (st Status, err error) {
	err = c.c.Post(ctx, "/planned", PlanRequest{Kind: kind, Reason: reason}, &st)
	return st, err
}

// Unplan calls a planned shutdown off.
func (c *Client) Unplan(ctx context.Context, by string) (st Status, err error) {
	err = c.c.Delete(ctx, "/planned?"+url.Values{"by": {by}}.Encode(), &st)
	return st, err
}

// Status fetches /status.
func (c *Client) Status(ctx context.Context) (st Status, err error) {
	err = c.c.Status(ctx, &st)
	return st, err
}

// Reconfigure asks bypassd to read the configuration again and take it in
// place.
func (c *Client) Reconfigure(ctx context.Context) (r Reconfigured, err error) {
	err = c.c.Post(ctx, "/reconfigure", nil, &r)
	return r, err
}
