// Package accounts is who may use a box's API and what each may do: the
// roles, the local accounts kept on /perm, and the API tokens automation
// signs in with. A role is the least a request needs; a token never does
// more than its account may.
package accounts

import "fmt"

// Role is what an account or token may do. The roles are ordered: each
// may do everything the one below it may.
type Role int

const (
	// None is no role: a RADIUS answer without one, or a request not
	// signed in. It opens nothing.
	None Role = iota
	// Viewer reads: status, ports, segments, events, logs, metrics, the
	// self-test's report.
	Viewer
	// Operator is a viewer that also forces bypass, starts the
	// self-test and reboots the box.
	Operator
	// Admin does everything, including what shows secrets or traffic
	// (the configuration, captures) and what replaces the box's software
	// or accounts.
	Admin
)

var roleNames = [...]string{None: "none", Viewer: "viewer", Operator: "operator", Admin: "admin"}

func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return fmt.Sprintf("role(%d)", int(r))
	}
	return roleNames[r]
}

// Article is "a viewer", "an operator", "an admin", for messages.
func (r Role) Article() string {
	switch r {
	case Operator, Admin:
		return "an " + r.String()
	case None:
		return "without a role"
	}
	return "a " + r.String()
}

// Allows says whether r may do what needs need.
func (r Role) Allows(need Role) bool { return r >= need && r > None }

// ParseRole reads a role's name; "none" is not one an account can have.
func ParseRole(s string) (Role, error) {
	for r, n := range roleNames {
		if n == s && Role(r) != None {
			return Role(r), nil
		}
	}
	return None, fmt.Errorf("unknown role %q (want viewer, operator or admin)", s)
}

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
