package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Users that statusd accepts: "gokrazy", as gokrazy's own web interface
// calls its user, and "ncpos".
var Users = []string{"gokrazy", "ncpos"}

// GokrazyPasswordFile is gokrazy's HTTP password on the appliance; the
// image builder writes it, readable by root only.
const GokrazyPasswordFile = "/etc/gokr-pw.txt"

// Auth decides who may read and who may control. Control always needs the
// password; reading needs it too when AuthRead is set.
type Auth struct {
	Password string // "" = nobody can authenticate, so control is refused
	Source   string // where Password came from: "configuration" or the gokrazy file
	AuthRead bool

	logins *loginGuard // set by Server.Handler; nil: no backoff
}

// LoadPassword returns the configured status password, or else gokrazy's
// from gokrazyFile.
func LoadPassword(configured, gokrazyFile string) (pw, source string, err error) {
	if configured != "" {
		return configured, "configuration", nil
	}
	b, err := os.ReadFile(gokrazyFile)
	if err != nil {
		return "", "", fmt.Errorf("no status.password configured and %w", err)
	}
	pw = strings.TrimSpace(string(b))
	if pw == "" {
		return "", "", fmt.Errorf("no status.password configured and %s is empty", gokrazyFile)
	}
	return pw, gokrazyFile, nil
}

// ok checks HTTP Basic credentials in constant time (per user, so the
// answer does not tell which part was wrong).
func (a *Auth) ok(r *http.Request) bool {
	user, pw, found := r.BasicAuth()
	if !found || a.Password == "" {
		return false
	}
	userOK := 0
	for _, u := range Users {
		userOK |= subtle.ConstantTimeCompare([]byte(user), []byte(u))
	}
	return userOK&subtle.ConstantTimeCompare([]byte(pw), []byte(a.Password)) == 1
}

func unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="ncpos", charset="UTF-8"`)
	apiError(w, http.StatusUnauthorized, why)
}

// requireRead guards what only reads: open unless AuthRead is set.
func (a *Auth) requireRead(h http.Handler) http.Handler {
	if !a.AuthRead {
		return h
	}
	return a.require(h)
}

// require guards h with Basic authentication.
func (a *Auth) require(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Password == "" {
			unauthorized(w, "no password is set up on this appliance (status.password or "+GokrazyPasswordFile+")")
			return
		}
		user, _, sent := r.BasicAuth()
		if !sent {
			unauthorized(w, "authentication required (user ncpos or gokrazy, the appliance password)")
			return
		}
		client := requestClient(r)
		if a.logins != nil {
			if wait := a.logins.wait(client); wait > 0 {
				secs := int(math.Ceil(wait.Seconds()))
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				apiError(w, http.StatusTooManyRequests, fmt.Sprintf("too many failed logins from %s: no login is checked for another %d s", client, secs))
				return
			}
		}
		if !a.ok(r) {
			if a.logins != nil {
				a.logins.fail(client, user)
			}
			unauthorized(w, "wrong user or password (user ncpos or gokrazy, the appliance password)")
			return
		}
		if a.logins != nil {
			a.logins.ok(client)
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
		apiError(w, http.StatusForbidden, "cross-site request refused")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := refererCheck(r); err != nil {
			apiError(w, http.StatusForbidden, err.Error())
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

// ControlInfo tells the dashboard how control works here.
type ControlInfo struct {
	AuthRead       bool     `json:"auth_read"`
	PasswordSource string   `json:"password_source"` // "configuration", the gokrazy file, or "" (control impossible)
	Users          []string `json:"users"`
	Bypass         string   `json:"bypass"` // "available" or why not
	Reboot         string   `json:"reboot"` // "available" or why not
}
