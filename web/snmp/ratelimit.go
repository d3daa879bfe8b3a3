package snmp

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// UDP lets anyone send with a forged source address, and the agent's
// answers are larger than what asks for them (an unauthenticated SNMPv3
// discovery answers 104 bytes to 61, a GETBULK with the right community
// up to 1472 to 40): unbounded, the box would amplify floods aimed at
// others. The bytes it answers are therefore limited per source address,
// and in all; what it sends is what amplifies, so bytes are counted, not
// requests, and a manager's walk of small GETNEXT answers goes as fast as
// ever.
const (
	// perSourceRate is the bytes a second answered to one address, with
	// a burst of PerSourceBurst: a manager bulk-walking every table of
	// a box needs a few tens of KiB.
	perSourceRate  = 256 << 10
	perSourceBurst = 512 << 10
	// totalRate caps the bytes answered to every address together, so
	// that forged sources spread over many addresses gain nothing.
	totalRate  = 1 << 20
	TotalBurst = 2 << 20
	// maxSources bounds the addresses remembered; past it, the least
	// recently seen is forgotten.
	maxSources = 4096
)

// limiter holds a token bucket per source address and one for all.
type limiter struct {
	mu      sync.Mutex
	now     func() time.Time
	rate    rate.Limit
	burst   int
	total   *rate.Limiter
	sources map[netip.Addr]*source
}

type source struct {
	lim  *rate.Limiter
	seen time.Time
}

func newLimiter(perSource rate.Limit, burst int, total rate.Limit, totalBurst int, now func() time.Time) *limiter {
	return &limiter{now: now, rate: perSource, burst: burst,
		total: rate.NewLimiter(total, totalBurst), sources: map[netip.Addr]*source{}}
}

// allow says whether an answer of n bytes may go to addr now.
func (l *limiter) allow(addr net.Addr, n int) bool {
	a := sourceAddr(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s := l.sources[a]
	if s == nil {
		if len(l.sources) >= maxSources {
			l.forgetOldest()
		}
		s = &source{lim: rate.NewLimiter(l.rate, l.burst)}
		l.sources[a] = s
	}
	s.seen = now
	// Both must have a token; the total is asked only when the source
	// may go on, so one noisy source does not use up everyone's.
	return s.lim.AllowN(now, n) && l.total.AllowN(now, n)
}

func (l *limiter) forgetOldest() {
	var oldest netip.Addr
	var at time.Time
	for a, s := range l.sources {
		if at.IsZero() || s.seen.Before(at) {
			oldest, at = a, s.seen
		}
	}
	delete(l.sources, oldest)
}

// sourceAddr is the address a datagram came from, IPv4 in IPv6 unmapped.
func sourceAddr(addr net.Addr) netip.Addr {
	if u, ok := addr.(*net.UDPAddr); ok {
		if a, ok := netip.AddrFromSlice(u.IP); ok {
			return a.Unmap()
		}
	}
	a, _ := netip.ParseAddr(addr.String())
	return a
}
