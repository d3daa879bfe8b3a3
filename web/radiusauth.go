package web

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/accounts"
	"github.com/ncpos/ncpos/web/radius"
)

const (
	// radiusRemember is how long a login RADIUS accepted is taken again
	// without asking: the dashboard signs every poll, once a second. A
	// role or password changed on the server takes effect within it.
	radiusRemember = 5 * time.Minute
	// radiusDeadTime is how long the local accounts sign in without
	// asking again after no server answered, so that an outage does not
	// hold every request for the servers' timeouts.
	radiusDeadTime = 30 * time.Second
)

// radiusLogin is the RADIUS side of signing in: the client for the
// configuration's servers, the logins it accepted lately, and whether
// the servers answer.
type radiusLogin struct {
	client *radius.Client
	now    func() time.Time
	note   func(sev events.Severity, fields []string, msg string)

	mu       sync.Mutex
	good     map[[sha256.Size]byte]goodRADIUS
	downTill time.Time       // no server answered: local accounts until then
	fellBack map[string]bool // accounts whose local sign-in during the outage was logged
}

type goodRADIUS struct {
	id    accounts.Identity
	until time.Time
}

// UseRADIUS makes a's logins with a password ask the servers of c first
// (none: the local accounts only). nas names the box to the servers.
func (a *Auth) UseRADIUS(c config.Auth, nas string) {
	if len(c.RADIUS) == 0 {
		a.radius.Store(nil)
		return
	}
	cl := &radius.Client{Timeout: c.Timeout.Duration, Retries: c.Retries, NASIdentifier: nas,
		Roles: map[string]accounts.Role{c.AdminClass: accounts.Admin, c.OperatorClass: accounts.Operator, c.ViewerClass: accounts.Viewer}}
	for _, s := range c.RADIUS {
		cl.Servers = append(cl.Servers, radius.Server{Addr: s.Addr(), Secret: s.Secret})
	}
	a.radius.Store(&radiusLogin{client: cl, now: time.Now, note: a.note, good: map[[sha256.Size]byte]goodRADIUS{}, fellBack: map[string]bool{}})
}

// note records an event about signing in, when the server gave a way to.
func (a *Auth) note(sev events.Severity, fields []string, msg string) {
	if a.events != nil {
		a.events(sev, fields, msg)
	}
}

// signIn asks the RADIUS servers about user and pw. local is whether the
// local accounts decide instead: only when no server answers.
func (l *radiusLogin) signIn(ctx context.Context, user, pw string) (id accounts.Identity, err error, local bool) {
	key := sha256.Sum256([]byte(user + "\x00" + pw))
	now := l.now()
	l.mu.Lock()
	g, ok := l.good[key]
	down := now.Before(l.downTill)
	l.mu.Unlock()
	switch {
	case ok && now.Before(g.until):
		return g.id, nil, false
	case down:
		return accounts.Identity{}, nil, true
	case !printableName(user):
		return accounts.Identity{}, accounts.ErrLogin, false
	}
	res, err := l.client.Authenticate(ctx, user, pw)
	switch {
	case errors.Is(err, radius.ErrNoAnswer):
		l.mu.Lock()
		l.downTill = l.now().Add(radiusDeadTime)
		l.mu.Unlock()
		l.note(events.Warning, []string{"action", "radius", "user", user},
			fmt.Sprintf("%v: local accounts sign in for %v, then the servers are asked again", err, radiusDeadTime))
		return accounts.Identity{}, nil, true
	case err != nil:
		l.note(events.Notice, []string{"action", "radius", "user", user}, fmt.Sprintf("login of %q refused: %v", user, err))
		return accounts.Identity{}, accounts.ErrLogin, false
	}
	id = accounts.Identity{Name: user, Account: user, Role: res.Role, Method: "radius"}
	l.mu.Lock()
	recovered := !l.downTill.IsZero()
	l.downTill, l.fellBack = time.Time{}, map[string]bool{}
	for k, g := range l.good {
		if !now.Before(g.until) {
			delete(l.good, k)
		}
	}
	l.good[key] = goodRADIUS{id: id, until: now.Add(radiusRemember)}
	l.mu.Unlock()
	if recovered {
		l.note(events.Notice, []string{"action", "radius"}, "RADIUS server "+res.Server+" answers again: logins ask the servers first")
	}
	return id, nil, false
}

// localDuringOutage logs, once per account and outage, that an account
// signed in locally because no RADIUS server answered.
func (l *radiusLogin) localDuringOutage(name string) {
	l.mu.Lock()
	first := !l.fellBack[name]
	l.fellBack[name] = true
	l.mu.Unlock()
	if first {
		l.note(events.Warning, []string{"action", "radius", "user", name},
			fmt.Sprintf("%s signed in with its local password: no RADIUS server answers", name))
	}
}

// printableName is a user name fit for the events: 1 to 64 printable
// characters.
func printableName(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}
