package web

import (
	"net"
	"net/http"
	"net/netip"
)

// clientKey names the client a request or connection comes from, for the
// per-client limits: its IPv4 address, or the /64 of a global IPv6
// address, since one host can pick any address in its /64 at will. A
// link-local address is itself: every host on the link shares fe80::/64.
func clientKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.Is6() && !a.IsLinkLocalUnicast() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

func requestClient(r *http.Request) string { return clientKey(r.RemoteAddr) }
