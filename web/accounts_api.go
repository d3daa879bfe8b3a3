package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/accounts"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/reply"
)

// accountError answers a refused account or token change.
func accountError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, accounts.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, accounts.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, accounts.ErrExists), errors.Is(err, accounts.ErrLastAdmin):
		code = http.StatusConflict
	case errors.Is(err, accounts.ErrNotKept):
		code = http.StatusServiceUnavailable
	}
	reply.Error(w, code, err.Error())
}

// roleOf reads a request's role, answering 400 for one that is not.
func roleOf(w http.ResponseWriter, name string) (accounts.Role, bool) {
	role, err := accounts.ParseRole(name)
	if err != nil {
		reply.Error(w, http.StatusBadRequest, "role: "+err.Error())
	}
	return role, err == nil
}

// accountEvent records a change to the accounts: who made it, from where.
func (s *Server) accountEvent(r *http.Request, action, subject, msg string) {
	by := caller.Who(r)
	s.event(events.Warning, events.KindControl, []string{"action", action, "by", by, "account", subject}, msg+" by "+by)
}

func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	id, _ := caller.IdentityOf(r)
	ipc.WriteJSON(w, api.Whoami(id))
}

func (s *Server) handleAccounts(w http.ResponseWriter, r *http.Request) {
	out := []api.Account{}
	for _, a := range s.Auth.store().Accounts() {
		out = append(out, api.Account{Name: a.Name, Role: a.Role.String(), Disabled: a.Disabled, Created: a.Created, Password: a.Password, Tokens: a.Tokens})
	}
	ipc.WriteJSON(w, map[string]any{"accounts": out})
}

func (s *Server) handleAddAccount(w http.ResponseWriter, r *http.Request) {
	var req api.AccountRequest
	if !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	role, ok := roleOf(w, req.Role)
	if !ok {
		return
	}
	if err := s.Auth.store().Add(req.Name, role, req.Password); err != nil {
		accountError(w, err)
		return
	}
	s.accountEvent(r, "account_add", req.Name, fmt.Sprintf("account %s added as %s", req.Name, role.Article()))
	ipc.WriteJSON(w, map[string]string{"status": "added"})
}

func (s *Server) handleChangeAccount(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req api.AccountChange
	if !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	st := s.Auth.store()
	if _, err := st.Account(name); err != nil {
		accountError(w, err)
		return
	}
	if req.Role == nil && req.Disabled == nil && req.Password == nil {
		reply.Error(w, http.StatusBadRequest, "nothing to change: send role, disabled or password")
		return
	}
	var role accounts.Role
	if req.Role != nil {
		var ok bool
		if role, ok = roleOf(w, *req.Role); !ok {
			return
		}
	}
	// Each part is its own durable change: the answer says how far it
	// got when a later one is refused.
	if req.Password != nil {
		if err := s.setPassword(name, *req.Password); err != nil {
			passwordError(w, err)
			return
		}
		s.accountEvent(r, "account_password", name, "password of "+name+" set")
	}
	if req.Role != nil {
		if err := st.SetRole(name, role); err != nil {
			accountError(w, err)
			return
		}
		s.accountEvent(r, "account_role", name, fmt.Sprintf("account %s made %s", name, role.Article()))
	}
	if req.Disabled != nil {
		if err := st.SetDisabled(name, *req.Disabled); err != nil {
			accountError(w, err)
			return
		}
		what := "enabled"
		if *req.Disabled {
			what = "disabled"
		}
		s.accountEvent(r, "account_"+what, name, "account "+name+" "+what)
	}
	ipc.WriteJSON(w, map[string]string{"status": "changed"})
}

func (s *Server) handleRemoveAccount(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.Auth.store().Remove(name); err != nil {
		accountError(w, err)
		return
	}
	s.accountEvent(r, "account_remove", name, "account "+name+" and its tokens removed")
	ipc.WriteJSON(w, map[string]string{"status": "removed"})
}

func (s *Server) handleTokens(w http.ResponseWriter, r *http.Request) {
	out := []api.Token{}
	for _, t := range s.Auth.store().Tokens() {
		out = append(out, apiToken(t))
	}
	ipc.WriteJSON(w, map[string]any{"tokens": out})
}

func apiToken(t accounts.Token) api.Token {
	return api.Token{Name: t.Name, Account: t.Account, Role: t.Role.String(), Created: t.Created, Expires: t.Expires, LastUsed: t.LastUsed}
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) {
	var req api.TokenRequest
	if !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	role, ok := roleOf(w, req.Role)
	if !ok {
		return
	}
	life, err := time.ParseDuration(req.ExpiresIn)
	if err != nil {
		reply.Error(w, http.StatusBadRequest, fmt.Sprintf("expires_in: %v (a duration such as 720h)", err))
		return
	}
	secret, t, err := s.Auth.store().CreateToken(req.Account, req.Name, role, life)
	if err != nil {
		accountError(w, err)
		return
	}
	s.accountEvent(r, "token_create", req.Account, fmt.Sprintf("token %s of %s created (%s, expires %s)", t.Name, t.Account, role, t.Expires.Format(time.RFC3339)))
	ipc.WriteJSON(w, api.TokenCreated{Token: apiToken(t), Secret: secret})
}

func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) {
	t, err := s.Auth.store().Revoke(r.PathValue("name"))
	if err != nil {
		accountError(w, err)
		return
	}
	s.accountEvent(r, "token_revoke", t.Account, "token "+t.Name+" of "+t.Account+" revoked")
	ipc.WriteJSON(w, map[string]string{"status": "revoked"})
}
