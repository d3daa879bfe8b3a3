package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/accounts"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/reply"
)

// User is the account every box starts with: an admin whose password is
// the box's control password. gokrazy's user and password open nothing
// here.
const User = accounts.Builtin

// Auth decides who may read and who may control: each request signs in
// as an account (HTTP Basic) or with a token (Bearer), and its role must
// allow the route. Reading needs a viewer only when AuthRead is set.
type Auth struct {
	Password *Password // the Builtin account's; nil or unset: it cannot sign in
	// Accounts are the box's accounts and tokens; nil: only the Builtin
	// account, and no changes.
	Accounts *accounts.Store
	// AuthRead is whether reading needs the password too, as the server
	// starts; setAuthRead changes it while it runs.
	AuthRead bool

	logins   *loginGuard  // set by Server.Handler; nil: no backoff
	readOpen atomic.Int32 // 0: as AuthRead says; 1: reading open; 2: reading needs the password

	once     sync.Once
	fallback *accounts.Store

	radius atomic.Pointer[radiusLogin] // nil: no RADIUS servers
	// events records what signing in notes (RADIUS outages, refusals);
	// set by Server.Handler.
	events func(sev events.Severity, fields []string, msg string)
	// refused records a request refused for its credentials or role in
	// the audit trail; set by Server.Handler.
	refused func(r *http.Request, name, method, role string, code int, why string)
}

// store is the accounts requests sign in with.
func (a *Auth) store() *accounts.Store {
	if a.Accounts != nil {
		return a.Accounts
	}
	a.once.Do(func() {
		a.fallback, _ = accounts.Load("", accounts.Options{Builtin: a.builtin})
	})
	return a.fallback
}

// builtin checks the Builtin account's password.
func (a *Auth) builtin(pw string) bool { return a.Password.Check(pw) }

// authRead says whether reading needs the password now.
func (a *Auth) authRead() bool {
	switch a.readOpen.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	return a.AuthRead
}

// setAuthRead changes whether reading needs the password.
func (a *Auth) setAuthRead(on bool) {
	if on {
		a.readOpen.Store(2)
	} else {
		a.readOpen.Store(1)
	}
}

// signIn checks a request's credentials: a Bearer token or HTTP Basic.
func (a *Auth) signIn(r *http.Request) (accounts.Identity, error) {
	if tok, ok := bearer(r); ok {
		return a.store().CheckToken(tok)
	}
	user, pw, _ := r.BasicAuth()
	rl := a.radius.Load()
	if rl != nil {
		id, err, local := rl.signIn(r.Context(), user, pw)
		if !local {
			return id, err
		}
	}
	id, err := a.store().CheckPassword(user, pw)
	if err == nil && rl != nil {
		rl.localDuringOutage(id.Name)
	}
	return id, err
}

// refuse records a refused request, when the server gave a way to.
func (a *Auth) refuse(r *http.Request, name, method, role string, code int, why string) {
	if a.refused != nil {
		a.refused(r, name, method, role, code, why)
	}
}

// sentMethod is how a request tries to sign in: "token" or "password".
func sentMethod(r *http.Request) string {
	if _, ok := bearer(r); ok {
		return "token"
	}
	return "password"
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// sentUser is the name a request tried to sign in as, for the failed
// login's event.
func sentUser(r *http.Request) (string, bool) {
	if sentMethod(r) == "token" {
		return "(token)", true
	}
	user, _, ok := r.BasicAuth()
	return user, ok
}

func unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="ncpos", charset="UTF-8"`)
	reply.Error(w, http.StatusUnauthorized, why)
}

// requireRead guards what only reads: open unless AuthRead is set, then
// for a viewer or above.
func (a *Auth) requireRead(h http.Handler) http.Handler {
	guarded := a.require(accounts.Viewer, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.authRead() {
			guarded.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// require guards h for a signed-in request whose role allows need; the
// request reaches h with its caller.Identity.
func (a *Auth) require(need accounts.Role, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.Password.Set() && !a.store().SignsIn() && a.radius.Load() == nil {
			unauthorized(w, "no control password is set up on this box: provision one with ncpos install, or set status.password_hash")
			return
		}
		user, sent := sentUser(r)
		if !sent {
			unauthorized(w, "authentication required (an account and its password, or an API token)")
			return
		}
		client := requestClient(r)
		var id accounts.Identity
		var err error
		if a.logins == nil {
			id, err = a.signIn(r)
		} else {
			// One check at a time per client: parallel guesses wait
			// their turn, and the backoff a failure starts holds them.
			release := a.logins.lock(client)
			account := user // a token's guesses count against its source only
			if sentMethod(r) == "token" {
				account = ""
			}
			wait, why := a.logins.wait(client), "from "+client
			if account != "" {
				if aw := a.logins.wait(accountKey(account)); aw > wait {
					wait, why = aw, fmt.Sprintf("for the account %q", account)
				}
			}
			if wait > 0 {
				release()
				secs := int(math.Ceil(wait.Seconds()))
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				reply.Error(w, http.StatusTooManyRequests, fmt.Sprintf("too many failed logins %s: no login is checked for another %d s", why, secs))
				a.refuse(r, user, sentMethod(r), "", http.StatusTooManyRequests, "too many failed logins "+why)
				return
			}
			if id, err = a.signIn(r); err == nil {
				a.logins.ok(client, account)
			} else {
				a.logins.fail(client, account)
			}
			release()
		}
		if err != nil {
			unauthorized(w, "wrong user, password or token")
			a.refuse(r, user, sentMethod(r), "", http.StatusUnauthorized, "wrong user, password or token")
			return
		}
		if !id.Role.Allows(need) {
			why := fmt.Sprintf("this needs the %s role: %s is %s", need, id.Name, id.Role.Article())
			reply.Error(w, http.StatusForbidden, why)
			a.refuse(r, id.Name, id.Method, id.Role.String(), http.StatusForbidden, why)
			return
		}
		h.ServeHTTP(w, caller.With(r, caller.Identity{Name: id.Name, Role: id.Role.String(), Method: id.Method}))
	})
}

// sameOrigin refuses state-changing requests that a browser sends on
// behalf of another site (CSRF): net/http's CrossOriginProtection judges
// Sec-Fetch-Site and Origin; when a browser sent neither, a Referer from
// elsewhere is refused too. Clients that send no browser headers at all
// (curl, scripts, Prometheus) pass: they still need the password.
func sameOrigin(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply.Error(w, http.StatusForbidden, "cross-site request refused")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := refererCheck(r); err != nil {
			reply.Error(w, http.StatusForbidden, err.Error())
			return
		}
		h.ServeHTTP(w, r)
	}))
}

func refererCheck(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Origin") != "" {
		return nil // CrossOriginProtection already judged these
	}
	ref := r.Header.Get("Referer")
	if ref == "" {
		return nil
	}
	u, err := url.Parse(ref)
	if err != nil || u.Host != r.Host {
		return errors.New("cross-site request refused (Referer from another site)")
	}
	return nil
}

// AccountsFile is where the box keeps its accounts and tokens.
const AccountsFile = "/perm/" + accounts.File

// LoadAccounts reads the box's accounts and tokens from file. When the
// file does not read, only ncpos signs in and the accounts cannot change
// until someone repairs or removes the file; the error says why.
func (a *Auth) LoadAccounts(file string) error {
	st, err := accounts.Load(file, accounts.Options{Builtin: a.builtin})
	a.Accounts = st
	return err
}
