// Package initapi is init's contract: what it answers on its unix socket
// when the configuration changes the box's own settings, and the Client
// statusd asks it with.
package initapi

import (
	"context"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// Name is the name of init's socket.
const Name = "init"

// Reconfigured is what init took on POST /reconfigure: the box's hostname
// and its management port as they now are.
type Reconfigured struct {
	Hostname   string     `json:"hostname"`
	Management Management `json:"management"`
}

// Management is the management port as it is: its interface, whether its
// DHCP client runs, its addresses and its default route's gateway.
type Management struct {
	Interface string   `json:"interface"`
	DHCP      bool     `json:"dhcp"`
	Addresses []string `json:"addresses"` // IPv4, then IPv6 but link-local, in CIDR form, as the kernel holds them
	Gateway   string   `json:"gateway,omitempty"`
	IPv6      string   `json:"ipv6"`               // "slaac", "static" or "off", as last set
	Gateway6  string   `json:"gateway6,omitempty"` // the IPv6 default route's
}

// Client asks init over its unix socket in a run directory.
type Client struct{ c *ipc.Client }

// NewClient is a client of init's socket in runDir; each request gives
// up after timeout.
func NewClient(runDir string, timeout time.Duration) *Client {
	return &Client{c: ipc.NewClient(runDir, Name, timeout)}
}

// Reconfigure asks init to read the configuration again and take the
// box's own settings in place: its hostname and its management address.
func (c *Client) Reconfigure(ctx context.Context) (r Reconfigured, err error) {
	err = c.c.Post(ctx, "/reconfigure", nil, &r)
	return r, err
}
