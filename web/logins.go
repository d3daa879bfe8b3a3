package web

import (
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"
)

// loginGuard slows password guessing per client: after a few wrong
// passwords, a client must wait before its next login is even checked,
// twice as long after each further failure. Other clients are not
// affected, so an attacker cannot lock the operator out from elsewhere.
type loginGuard struct {
	lim Limits
	now func() time.Time
	// onFail is told of every failure that was checked (and so of at most
	// one per backoff period per client): statusd logs it as an event.
	onFail func(client, user string, failures int, wait time.Duration)

	mu      sync.Mutex
	clients map[string]*loginState
	checks  [64]sync.Mutex // by client hash: one login check at a time per client

	failures  atomic.Uint64 // wrong credentials checked
	throttled atomic.Uint64 // logins refused unchecked while a client waits
}

type loginState struct {
	failures int
	last     time.Time // of the latest failure
	until    time.Time // no login is checked before
}

func newLoginGuard(l Limits, now func() time.Time) *loginGuard {
	return &loginGuard{lim: l, now: now, clients: map[string]*loginState{}}
}

// lock serializes the login checks of client (and of the few clients that
// share its lock) and returns the unlock.
func (g *loginGuard) lock(client string) func() {
	h := fnv.New32a()
	h.Write([]byte(client))
	m := &g.checks[h.Sum32()%uint32(len(g.checks))]
	m.Lock()
	return m.Unlock
}

// wait says how long client must still wait before a login is checked.
func (g *loginGuard) wait(client string) time.Duration {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.clients[client]
	if st == nil || !now.Before(st.until) {
		return 0
	}
	g.throttled.Add(1)
	return st.until.Sub(now)
}

// fail records a wrong login from client.
func (g *loginGuard) fail(client, user string) {
	now := g.now()
	g.mu.Lock()
	if len(g.clients) >= g.lim.MaxClients {
		g.forget(now)
	}
	st := g.clients[client]
	if st == nil {
		st = &loginState{}
		g.clients[client] = st
	}
	st.failures++
	st.last = now
	var wait time.Duration
	if over := st.failures - g.lim.LoginFreeFailures; over > 0 {
		wait = g.lim.LoginBackoff << min(over-1, 30)
		if wait <= 0 || wait > g.lim.LoginMaxBackoff {
			wait = g.lim.LoginMaxBackoff
		}
		st.until = now.Add(wait)
	}
	n := st.failures
	g.mu.Unlock()
	g.failures.Add(1)
	if g.onFail != nil {
		g.onFail(client, user, n, wait)
	}
}

// ok clears client's failures after a good login.
func (g *loginGuard) ok(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.clients, client)
}

// forget drops clients whose last failure is long past (g.mu held), so
// the map holds only recent guessers.
func (g *loginGuard) forget(now time.Time) {
	for k, st := range g.clients {
		if now.Sub(st.last) > g.lim.LoginForget && !now.Before(st.until) {
			delete(g.clients, k)
		}
	}
}
