package web

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter caps open connections, in all and per client, across every
// listener it wraps. A client over its own cap is answered with a short
// 503 and closed at once, so it costs neither a goroutine that waits for
// its headers nor a place in the server. When all places are taken, the
// newcomer gets the place of a connection that is not being served (still
// sending its headers, or idle between requests) from the client that
// holds the most: many clients that open connections and never finish
// them cannot keep the operator out.
type connLimiter struct {
	max, perClient int
	now            func() time.Time

	mu       sync.Mutex
	conns    map[*limitedConn]struct{}
	byClient map[string]int

	refused atomic.Uint64 // closed at once: over a client's cap, or all serving
	evicted atomic.Uint64 // closed to make room
}

func newConnLimiter(l Limits) *connLimiter {
	return &connLimiter{max: l.MaxConns, perClient: l.MaxConnsPerClient, now: time.Now,
		conns: map[*limitedConn]struct{}{}, byClient: map[string]int{}}
}

// wrap returns ln with the caps applied. On a TLS listener a refused
// connection is closed without a word: no HTTP can be said before the
// handshake, and a handshake is what the cap saves.
func (c *connLimiter) wrap(ln net.Listener, tls bool) net.Listener {
	return &limitedListener{Listener: ln, c: c, tls: tls}
}

// admit counts conn in, making room if need be, or says why not.
func (c *connLimiter) admit(conn *limitedConn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.byClient[conn.client]; n >= c.perClient {
		return fmt.Errorf("too many connections from %s (%d open)", conn.client, n)
	}
	if len(c.conns) >= c.max {
		victim := c.victim()
		if victim == nil {
			return fmt.Errorf("too many connections (%d open, all being served)", len(c.conns))
		}
		c.forget(victim)
		c.evicted.Add(1)
		// Closing outside the lock is not needed: Close on a forgotten
		// connection does not come back here.
		victim.Conn.Close()
	}
	c.conns[conn] = struct{}{}
	c.byClient[conn.client]++
	return nil
}

// victim is the oldest connection not being served of the client with
// the most connections (c.mu held), or nil.
func (c *connLimiter) victim() *limitedConn {
	var best *limitedConn
	for lc := range c.conns {
		if lc.serving.Load() > 0 {
			continue
		}
		if best == nil {
			best = lc
			continue
		}
		nb, nl := c.byClient[best.client], c.byClient[lc.client]
		if nl > nb || (nl == nb && lc.opened.Before(best.opened)) {
			best = lc
		}
	}
	return best
}

func (c *connLimiter) forget(lc *limitedConn) {
	if _, ok := c.conns[lc]; !ok {
		return
	}
	delete(c.conns, lc)
	if c.byClient[lc.client]--; c.byClient[lc.client] <= 0 {
		delete(c.byClient, lc.client)
	}
}

func (c *connLimiter) release(lc *limitedConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(lc)
}

type limitedListener struct {
	net.Listener
	c   *connLimiter
	tls bool
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: conn, c: l.c, client: clientKey(conn.RemoteAddr().String()), opened: l.c.now()}
		if err := l.c.admit(lc); err != nil {
			l.c.refused.Add(1)
			if l.tls {
				conn.Close()
			} else {
				go refuseConn(conn, err.Error())
			}
			continue
		}
		return lc, nil
	}
}

// refuseConn tells the client why, in HTTP, without reading its request,
// and gives up on a client that does not take the answer.
func refuseConn(conn net.Conn, why string) {
	defer conn.Close()
	body := "statusd: " + why + "; try again later\n"
	conn.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nRetry-After: 5\r\nConnection: close\r\n\r\n%s", len(body), body)
}

type limitedConn struct {
	net.Conn
	c       *connLimiter
	client  string
	opened  time.Time
	serving atomic.Int32 // handlers running on it
	once    sync.Once
}

func (lc *limitedConn) Close() error {
	lc.once.Do(func() { lc.c.release(lc) })
	return lc.Conn.Close()
}

type connKey struct{}

// connContext keeps the connection in its requests' context, so that
// markServing can find it (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if pc, ok := c.(*peekedConn); ok {
		c = pc.Conn
	}
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// markServing marks a connection as being served while h runs: its
// request has arrived whole, so it is not a candidate to make room.
func markServing(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
			lc.serving.Add(1)
			defer lc.serving.Add(-1)
		}
		h.ServeHTTP(w, r)
	})
}
