package config

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// Auth is how people sign in besides the box's local accounts: the
// RADIUS servers a network team runs for its switches and routers. With
// servers set, a login with a password asks them first; the local
// accounts are used only when none answers (never after a rejection).
type Auth struct {
	RADIUS []RADIUSServer `toml:"radius"`
	// Timeout is how long one try waits for a server's answer; Retries
	// how many more tries a server gets before the next is asked.
	Timeout Duration `toml:"radius_timeout"`
	Retries int      `toml:"radius_retries"`
	// The Class or Filter-Id values that give each role; a reply with
	// none of them opens nothing.
	AdminClass    string `toml:"admin_class"`
	OperatorClass string `toml:"operator_class"`
	ViewerClass   string `toml:"viewer_class"`
}

// RADIUSServer is one RADIUS server and the secret it shares with the box.
type RADIUSServer struct {
	Server string `toml:"server"` // host or host:port; port 1812 when none
	Secret string `toml:"secret"`
}

// RADIUSPort is the port a RADIUS server without one is asked on.
const RADIUSPort = 1812

// Addr is the server's host:port.
func (s RADIUSServer) Addr() string {
	if _, _, err := net.SplitHostPort(s.Server); err == nil {
		return s.Server
	}
	return net.JoinHostPort(strings.Trim(s.Server, "[]"), strconv.Itoa(RADIUSPort))
}

func defaultAuth() Auth {
	return Auth{RADIUS: []RADIUSServer{}, Timeout: Duration{3 * time.Second}, Retries: 1,
		AdminClass: "ncpos-admin", OperatorClass: "ncpos-operator", ViewerClass: "ncpos-viewer"}
}

func (c *Config) validateAuth(add addFunc) {
	a := c.Auth
	if len(a.RADIUS) > 8 {
		add("auth.radius", "%d servers, want at most 8: a login that waits for each of them times out first", len(a.RADIUS))
	}
	for i, s := range a.RADIUS {
		p := "auth.radius[" + strconv.Itoa(i) + "]."
		host, port, err := net.SplitHostPort(s.Addr())
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(host, " /") {
			add(p+"server", "%q is not a server, want host or host:port, e.g. \"192.0.2.10\" or \"radius.example.net:1812\"", s.Server)
		}
		if s.Secret == RedactedSecret {
			add(p+"secret", "%q stands for a secret the box keeps, and there is none to keep here: give the secret itself", s.Secret)
		} else if len(s.Secret) < 8 || len(s.Secret) > 128 {
			add(p+"secret", "a secret of %d characters, want 8 to 128 (RFC 2865 asks for one hard to guess)", len(s.Secret))
		}
	}
	if d := a.Timeout.Duration; d < 100*time.Millisecond || d > 30*time.Second {
		add("auth.radius_timeout", "%v, want 100ms to 30s", a.Timeout)
	}
	if a.Retries < 0 || a.Retries > 5 {
		add("auth.radius_retries", "%d, want 0 to 5", a.Retries)
	}
	seen := map[string]string{}
	for _, f := range []struct{ path, v string }{{"auth.admin_class", a.AdminClass}, {"auth.operator_class", a.OperatorClass}, {"auth.viewer_class", a.ViewerClass}} {
		switch {
		case f.v == "" || len(f.v) > 253:
			add(f.path, "want 1 to 253 characters (a RADIUS attribute's value)")
		case seen[f.v] != "":
			add(f.path, "%q is %s too: each role needs its own", f.v, seen[f.v])
		}
		seen[f.v] = f.path
	}
}
