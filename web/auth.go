package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/ncpos/ncpos/web/reply"
)

// User is the one user statusd accepts. gokrazy's user and password
// open nothing here.
const User = "ncpos"

// users lists the accepted users, for the dashboard.
var users = []string{User}

// Auth decides who may read and who may control. Control always needs the
// password; reading needs it too when AuthRead is set.
type Auth struct {
	Password *Password // nil or unset: nobody can authenticate, so control is refused
	// AuthRead is whether reading needs the password too, as the server
	// starts; setAuthRead changes it while it runs.
	AuthRead bool

	logins   *loginGuard  // set by Server.Handler; nil: no backoff
	readOpen atomic.Int32 // 0: as AuthRead says; 1: reading open; 2: reading needs the password
}

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

// ok checks HTTP Basic credentials; the user name is compared in constant
// time and the password always checked, so the answer does not tell
// which part was wrong.
func (a *Auth) ok(r *http.Request) bool {
	user, pw, found := r.BasicAuth()
	if !found {
		return false
	}
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(User)) == 1
	return a.Password.Check(pw) && userOK
}

func unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="ncpos", charset="UTF-8"`)
	reply.Error(w, http.StatusUnauthorized, why)
}

// requireRead guards what only reads: open unless AuthRead is set.
func (a *Auth) requireRead(h http.Handler) http.Handler {
	guarded := a.require(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.authRead() {
			guarded.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// require guards h with Basic authentication.
func (a *Auth) require(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.Password.Set() {
			unauthorized(w, "no control password is set up on this box: provision one with ncpos install, or set status.password_hash")
			return
		}
		user, _, sent := r.BasicAuth()
		if !sent {
			unauthorized(w, "authentication required (user ncpos and the box's control password)")
			return
		}
		client := requestClient(r)
		good := false
		if a.logins == nil {
			good = a.ok(r)
		} else {
			// One check at a time per client: parallel guesses wait
			// their turn, and the backoff a failure starts holds them.
			release := a.logins.lock(client)
			if wait := a.logins.wait(client); wait > 0 {
				release()
				secs := int(math.Ceil(wait.Seconds()))
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				reply.Error(w, http.StatusTooManyRequests, fmt.Sprintf("too many failed logins from %s: no login is checked for another %d s", client, secs))
				return
			}
			if good = a.ok(r); good {
				a.logins.ok(client)
			} else {
				a.logins.fail(client, user)
			}
			release()
		}
		if !good {
			unauthorized(w, "wrong user or password (user ncpos and the box's control password)")
			return
		}
		h.ServeHTTP(w, r)
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
