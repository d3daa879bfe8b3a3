package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/web/accounts"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/reply"
)

// PasswordFile is the box's control password (a bcrypt hash) on /perm:
// provisioned by the image builder or ncpos install, replaced by rotation.
const PasswordFile = "/perm/" + passwd.File

// Password is the control password as statusd checks it. Only its hash is
// kept; a password that matched is remembered by its SHA-256, so that a
// client that sends it with every request (the dashboard with auth_read)
// costs one bcrypt check, not one per request.
type Password struct {
	change sync.Mutex // one rotation at a time: file and memory agree
	mu     sync.RWMutex
	hash   []byte
	source string // where hash came from, for the dashboard
	file   string // where rotation keeps a new one
	fixed  string // why rotation is refused ("" = allowed)
	good   [sha256.Size]byte
	goodOK bool
}

// LoadPassword finds the control password: the configuration's
// status.password_hash or status.password when set (a fleet that manages
// it centrally; rotation then refused), else the hash in file. A box
// without either refuses control and says how to set one up.
func LoadPassword(st config.Status, file string) (*Password, error) {
	p := &Password{file: file}
	switch {
	case st.PasswordHash != "":
		if err := passwd.CheckHash([]byte(st.PasswordHash)); err != nil {
			return p, fmt.Errorf("status.password_hash: %w", err)
		}
		p.hash, p.source = []byte(st.PasswordHash), "status.password_hash"
	case st.Password != "":
		h, err := passwd.Hash(st.Password)
		if err != nil {
			return p, fmt.Errorf("status.password: %w", err)
		}
		p.hash, p.source = h, "status.password"
	default:
		b, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			return p, fmt.Errorf("no control password on this box (%s missing, no status.password_hash): provision one with ncpos install, or set status.password_hash", file)
		}
		if err != nil {
			return p, err
		}
		h := []byte(strings.TrimSpace(string(b)))
		if err := passwd.CheckHash(h); err != nil {
			return p, fmt.Errorf("%s: %w", file, err)
		}
		p.hash, p.source = h, file
		return p, nil
	}
	p.fixed = "the password is set by " + p.source + " in the configuration: change it there"
	return p, nil
}

// Set reports whether a password is set up.
func (p *Password) Set() bool {
	if p == nil {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.hash != nil
}

// Source says where the password came from ("" = none).
func (p *Password) Source() string {
	if p == nil {
		return ""
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.source
}

// Check says whether pw is the control password.
func (p *Password) Check(pw string) bool {
	if p == nil {
		return false
	}
	sum := sha256.Sum256([]byte(pw))
	p.mu.RLock()
	h, good, goodOK := p.hash, p.good, p.goodOK
	p.mu.RUnlock()
	if h == nil {
		return false
	}
	if goodOK && subtle.ConstantTimeCompare(sum[:], good[:]) == 1 {
		return true
	}
	if !passwd.Matches(h, pw) {
		return false
	}
	p.mu.Lock()
	if string(p.hash) == string(h) { // not rotated meanwhile
		p.good, p.goodOK = sum, true
	}
	p.mu.Unlock()
	return true
}

// errPasswordFixed says rotation is refused: the configuration sets the
// password.
var errPasswordFixed = errors.New("password set by the configuration")

// Change makes pw the control password and keeps its hash in the file;
// the old one stops working at once. Nothing changes when the file cannot
// be written.
func (p *Password) Change(pw string) error {
	p.change.Lock()
	defer p.change.Unlock()
	p.mu.RLock()
	fixed, file := p.fixed, p.file
	p.mu.RUnlock()
	if fixed != "" {
		return fmt.Errorf("%w: %s", errPasswordFixed, fixed)
	}
	h, err := passwd.Hash(pw)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("keeping the new password: %w", err)
	}
	if err := durable.WriteFile(file, append(h, '\n'), 0o600); err != nil {
		return fmt.Errorf("keeping the new password: %w", err)
	}
	p.mu.Lock()
	p.hash, p.source, p.goodOK = h, file, false
	p.mu.Unlock()
	return nil
}

// handlePassword changes the password of the account the request signed
// in as; for ncpos that is the box's control password.
func (s *Server) handlePassword(w http.ResponseWriter, r *http.Request) {
	var req api.PasswordRequest
	if !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	id, _ := caller.IdentityOf(r)
	switch id.Method {
	case "token":
		reply.Error(w, http.StatusForbidden, "a token cannot change a password: sign in with the account's password")
		return
	case "radius":
		reply.Error(w, http.StatusForbidden, "the password of "+id.Name+" is kept by the RADIUS server: change it there")
		return
	}
	if err := s.setPassword(id.Name, req.NewPassword); err != nil {
		passwordError(w, err)
		return
	}
	by := caller.Who(r)
	what := "password of " + id.Name
	if id.Name == accounts.Builtin {
		what = "control password"
	}
	s.event(events.Warning, events.KindControl, []string{"action", "password", "by", by, "account", id.Name}, what+" changed by "+by)
	ipc.WriteJSON(w, map[string]string{"status": "changed"})
}

// setPassword sets an account's password: for ncpos the box's control
// password, for the others their own.
func (s *Server) setPassword(name, pw string) error {
	if name == accounts.Builtin {
		return s.Auth.Password.Change(pw)
	}
	return s.Auth.store().SetPassword(name, pw)
}

// passwordError answers a refused password change.
func passwordError(w http.ResponseWriter, err error) {
	var strength *passwd.WeakError
	switch {
	case errors.Is(err, errPasswordFixed):
		reply.Error(w, http.StatusConflict, err.Error())
	case errors.As(err, &strength):
		reply.Error(w, http.StatusBadRequest, "new_password: "+err.Error())
	case errors.Is(err, accounts.ErrInvalid), errors.Is(err, accounts.ErrNotFound):
		accountError(w, err)
	default:
		reply.Error(w, http.StatusServiceUnavailable, err.Error()+" (the old password still works)")
	}
}
