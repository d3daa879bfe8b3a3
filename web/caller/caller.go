// Package caller says who made a request to statusd's API: the user the
// request authenticated as and the address it came from, as events and
// the configuration's history record them.
package caller

import (
	"net"
	"net/http"
)

// Of returns the user r authenticated as ("" when none) and the address
// it came from.
func Of(r *http.Request) (user, from string) {
	user, _, _ = r.BasicAuth()
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
