package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncpos/ncpos/web/reply"
)

// hostCheck refuses requests whose Host header is not one of the box's
// own names or addresses. A DNS-rebinding page makes a browser send its
// requests to the box under the attacker's name; with this check they are
// refused before any handler runs, so such a page can read nothing even
// where reading needs no password.
type hostCheck struct {
	names    []string                   // status.names, lower case, no trailing dot; under mu
	hostname func() string              // the box's hostname
	addrs    func() ([]net.Addr, error) // the box's addresses

	mu      sync.Mutex
	cached  map[netip.Addr]bool
	fetched time.Time

	refused atomic.Uint64
}

func newHostCheck(names []string) *hostCheck {
	hc := &hostCheck{addrs: net.InterfaceAddrs, hostname: func() string { h, _ := os.Hostname(); return h }}
	for _, n := range names {
		hc.names = append(hc.names, normalName(n))
	}
	return hc
}

func normalName(n string) string { return strings.TrimSuffix(strings.ToLower(n), ".") }

// allowed says whether host (a Host header, with or without port) names
// this box: its hostname (also under .local), a name from status.names,
// localhost, a loopback address, or an address of one of its interfaces.
// An empty Host (HTTP/1.0) is allowed: a browser always sends one.
func (hc *hostCheck) allowed(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap().WithZone("")
		return a.IsLoopback() || hc.isLocal(a)
	}
	name := normalName(host)
	if name == "localhost" {
		return true
	}
	if hn := normalName(hc.hostname()); hn != "" && (name == hn || name == hn+".local") {
		return true
	}
	hc.mu.Lock()
	names := hc.names
	hc.mu.Unlock()
	for _, n := range names {
		if name == n {
			return true
		}
	}
	return false
}

// isLocal looks a up among the box's addresses, read again at most every
// two seconds (DHCP changes them).
func (hc *hostCheck) isLocal(a netip.Addr) bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.cached == nil || time.Since(hc.fetched) > 2*time.Second {
		hc.cached = map[netip.Addr]bool{}
		hc.fetched = time.Now()
		addrs, _ := hc.addrs()
		for _, ad := range addrs {
			if ipn, ok := ad.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
					hc.cached[ip.Unmap()] = true
				}
			}
		}
	}
	return hc.cached[a]
}

func (hc *hostCheck) middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hc.allowed(r.Host) {
			hc.refused.Add(1)
			reply.Error(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q is not a name or address of this box (its hostname, its addresses, or a name in status.names)", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}
