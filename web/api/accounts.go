package api

import "time"

// The accounts and tokens (web/API.md, "Accounts and tokens"): statusd
// answers and decodes these, the host's user and token commands send
// them. Roles travel by name: viewer, operator or admin.

// BuiltinAccount is the admin every box starts with, whose password is
// the box's control password.
const BuiltinAccount = "ncpos"

// Account is one account as GET /api/v1/accounts lists it.
type Account struct {
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	Disabled bool      `json:"disabled"`
	Created  time.Time `json:"created,omitzero"`
	// Password is "own", or "box" for the account ncpos, whose password
	// is the box's control password.
	Password string `json:"password"`
	Tokens   int    `json:"tokens"`
}

// AccountRequest is POST /api/v1/accounts: a new account.
type AccountRequest struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password"`
}

// AccountChange is POST /api/v1/accounts/{name}: what to change; absent
// fields stay as they are.
type AccountChange struct {
	Role     *string `json:"role,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
	Password *string `json:"password,omitempty"`
}

// Token is one API token as GET /api/v1/tokens lists it; never its
// secret.
type Token struct {
	Name     string    `json:"name"`
	Account  string    `json:"account"`
	Role     string    `json:"role"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	LastUsed time.Time `json:"last_used,omitzero"`
}

// TokenRequest is POST /api/v1/tokens.
type TokenRequest struct {
	Account string `json:"account"`
	Name    string `json:"name"`
	Role    string `json:"role"`
	// ExpiresIn is the token's life as a Go duration ("720h").
	ExpiresIn string `json:"expires_in"`
}

// TokenCreated answers POST /api/v1/tokens: the token and its secret,
// shown this once.
type TokenCreated struct {
	Token
	Secret string `json:"secret"`
}

// Whoami answers GET /api/v1/whoami: who the request signed in as.
type Whoami struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Method string `json:"method"`
}

// AuditEntry is one request GET /api/v1/audit lists: a control action or
// a refused sign-in, who made it and how it ended.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Name is the account, account/token, or the name a refused login
	// gave; Method how it signed in: password, token or radius.
	Name   string `json:"name"`
	Method string `json:"method"`
	Role   string `json:"role,omitempty"`
	From   string `json:"from"`
	// Action is the request: "POST /api/v1/control/bypass".
	Action string `json:"action"`
	Status int    `json:"status"`
	// Result is "ok", "refused" (not signed in, or a role too low) or
	// "failed" (signed in, but the request did not succeed), with the
	// refusal's reason where there is one.
	Result string `json:"result"`
}
