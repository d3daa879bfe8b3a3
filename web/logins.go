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

// accountFreeFailures wrong passwords for one account, from anywhere, are
// answered at once: a guesser spread over many addresses then slows that
// account's logins too. More than a client's, so that a colleague's typos
// from elsewhere do not hold the account.
const accountFreeFailures = 10

// accountKey is the account's entry among the clients' (an address has
// no space in it).
func accountKey(user string) string { return "account " + user }

// fail records a wrong login from client, for user: each of them then
// backs off on its own (user "" : the client alone, as for a token).
func (g *loginGuard) fail(client, user string) {
	now := g.now()
	g.mu.Lock()
	if len(g.clients) >= g.lim.MaxClients {
		g.forget(now)
	}
	n, wait := g.failKey(client, g.lim.LoginFreeFailures, now)
	if user != "" {
		if _, w := g.failKey(accountKey(user), accountFreeFailures, now); w > wait {
			wait = w
		}
	}
	g.mu.Unlock()
	g.failures.Add(1)
	if g.onFail != nil {
		g.onFail(client, user, n, wait)
	}
}

// failKey counts a failure of key (g.mu held) and returns its failures
// and the wait it starts.
func (g *loginGuard) failKey(key string, free int, now time.Time) (int, time.Duration) {
	st := g.clients[key]
	if st == nil {
		st = &loginState{}
		g.clients[key] = st
	}
	st.failures++
	st.last = now
	var wait time.Duration
	if over := st.failures - free; over > 0 {
		wait = g.lim.LoginBackoff << min(over-1, 30)
		if wait <= 0 || wait > g.lim.LoginMaxBackoff {
			wait = g.lim.LoginMaxBackoff
		}
		st.until = now.Add(wait)
	}
	return st.failures, wait
}

// ok clears the failures of client and user after a good login.
func (g *loginGuard) ok(client, user string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.clients, client)
	delete(g.clients, accountKey(user))
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
