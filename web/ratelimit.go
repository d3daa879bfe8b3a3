package web

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncpos/ncpos/web/reply"
	"golang.org/x/time/rate"
)

// rateLimiter keeps each client to Limits.Rate requests per second (with
// Burst at once): every dashboard answer samples and renders, and no one
// client should be able to keep statusd busy for the others.
type rateLimiter struct {
	lim Limits
	now func() time.Time

	mu      sync.Mutex
	clients map[string]*clientRate

	limited atomic.Uint64
}

type clientRate struct {
	l    *rate.Limiter
	seen time.Time
}

func newRateLimiter(l Limits, now func() time.Time) *rateLimiter {
	return &rateLimiter{lim: l, now: now, clients: map[string]*clientRate{}}
}

// allow says whether client may send a request now; if not, how long
// until it may.
func (rl *rateLimiter) allow(client string) (bool, time.Duration) {
	now := rl.now()
	rl.mu.Lock()
	defer rl.mu.Unlock()
	c := rl.clients[client]
	if c == nil {
		if len(rl.clients) >= rl.lim.MaxClients {
			rl.prune(now)
		}
		if len(rl.clients) >= rl.lim.MaxClients {
			// Full of recent clients (many addresses at once): the one
			// seen longest ago makes room, so that a newcomer, the
			// operator perhaps, is never locked out.
			rl.evictOldest()
		}
		c = &clientRate{l: rate.NewLimiter(rate.Limit(rl.lim.Rate), rl.lim.Burst)}
		rl.clients[client] = c
	}
	c.seen = now
	r := c.l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (rl *rateLimiter) evictOldest() {
	var oldest string
	var seen time.Time
	for k, c := range rl.clients {
		if oldest == "" || c.seen.Before(seen) {
			oldest, seen = k, c.seen
		}
	}
	delete(rl.clients, oldest)
}

// prune forgets clients idle for a minute: their buckets are full again.
func (rl *rateLimiter) prune(now time.Time) {
	for k, c := range rl.clients {
		if now.Sub(c.seen) > time.Minute {
			delete(rl.clients, k)
		}
	}
}

func (rl *rateLimiter) middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := requestClient(r)
		ok, wait := rl.allow(client)
		if ok {
			h.ServeHTTP(w, r)
			return
		}
		rl.limited.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		reply.Error(w, http.StatusTooManyRequests, fmt.Sprintf("too many requests from %s (more than %g per second): retry in %v", client, rl.lim.Rate, wait.Round(time.Millisecond)))
	})
}
