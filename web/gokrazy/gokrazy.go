// Package gokrazy reaches gokrazy's own HTTP server on the box, over its
// root-only socket: the root update and the reboot statusd hands on.
package gokrazy

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Socket is gokrazy's HTTP server on the box. Images carry no
// gokrazy password, so gokrazy serves only this socket (root only, mode
// 0600) and nothing on the network: its root update and reboot are
// reached only through statusd's authenticated endpoints, and its other
// endpoints (divert among them) not at all.
const Socket = "/run/gokrazy-http.sock"

// Client talks to gokrazy over its socket (sock "" = Socket).
func Client(sock string, timeout time.Duration) *http.Client {
	if sock == "" {
		sock = Socket
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DisableKeepAlives: true, // one request per call: nothing left open
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}
