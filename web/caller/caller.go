// Package caller says who made a request to statusd's API: the account
// or token the request signed in as, its role, and the address it came
// from, as events and the configuration's history record them.
package caller

import (
	"context"
	"net"
	"net/http"
)

// Identity is who a request signed in as.
type Identity struct {
	Name   string // the account, or account/token
	Role   string // viewer, operator or admin
	Method string // password or token
}

type key struct{}

// With returns r as signed in by id.
func With(r *http.Request, id Identity) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), key{}, id))
}

// IdentityOf returns who r signed in as, if it did.
func IdentityOf(r *http.Request) (Identity, bool) {
	id, ok := r.Context().Value(key{}).(Identity)
	return id, ok
}

// Of returns the name r signed in as ("" when none) and the address it
// came from.
func Of(r *http.Request) (user, from string) {
	if id, ok := IdentityOf(r); ok {
		user = id.Name
	} else {
		user, _, _ = r.BasicAuth()
	}
	from, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		from = r.RemoteAddr
	}
	return user, from
}

// Who names the caller as user@address ("?" for no user).
func Who(r *http.Request) string {
	user, from := Of(r)
	if user == "" {
		user = "?"
	}
	return user + "@" + from
}
