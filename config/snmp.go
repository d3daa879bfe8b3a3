package config

import (
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SNMP configures the read-only SNMP agent on the management port and
// where its notifications go. The agent runs when a community or a user
// is set.
type SNMP struct {
	Port      int        `toml:"port"`      // UDP port on the management interface
	Community string     `toml:"community"` // SNMPv2c read-only community; "" = no SNMPv2c
	Location  string     `toml:"location"`  // sysLocation
	Contact   string     `toml:"contact"`   // sysContact
	Users     []SNMPUser `toml:"user"`      // SNMPv3 users, authPriv only
	Traps     []SNMPTrap `toml:"trap"`      // notification receivers
}

// SNMPUser is an SNMPv3 user with authentication and privacy.
type SNMPUser struct {
	Name    string `toml:"name"`
	Auth    string `toml:"auth"`     // SHA-224, SHA-256, SHA-384 or SHA-512
	AuthKey string `toml:"auth_key"` // passphrase, at least 8 characters
	Priv    string `toml:"priv"`     // AES, AES-192 or AES-256
	PrivKey string `toml:"priv_key"`
}

// SNMPTrap is a notification receiver: SNMPv2c with a community, or
// SNMPv3 as one of the users.
type SNMPTrap struct {
	Target    string `toml:"target"` // host:port, port usually 162
	Community string `toml:"community"`
	User      string `toml:"user"`
}

// Enabled tells whether the agent runs.
func (s SNMP) Enabled() bool { return s.Community != "" || len(s.Users) > 0 }

// The protocol names the agent takes (package snmp maps them).
var (
	SNMPAuthProtocols = []string{"SHA-224", "SHA-256", "SHA-384", "SHA-512"}
	SNMPPrivProtocols = []string{"AES", "AES-192", "AES-256"}
)

var snmpUserRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)

func (c *Config) validateSNMP(add addFunc) {
	s := c.SNMP
	if s.Port < 1 || s.Port > 65535 {
		add("snmp.port", "%d is not a UDP port, want 1 to 65535 (161 is SNMP's)", s.Port)
	}
	if s.Community != "" && len(s.Community) < 8 {
		add("snmp.community", "a community of %d characters is guessed easily, want at least 8", len(s.Community))
	}
	for _, f := range []struct{ path, v string }{{"snmp.location", s.Location}, {"snmp.contact", s.Contact}, {"snmp.community", s.Community}} {
		if len(f.v) > 255 || strings.ContainsFunc(f.v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			add(f.path, "want at most 255 printable characters")
		}
	}
	users := map[string]bool{}
	for i, u := range s.Users {
		p := "snmp.user[" + strconv.Itoa(i) + "]."
		if !snmpUserRE.MatchString(u.Name) {
			add(p+"name", "%q is not a user name, want 1 to 32 letters, digits, \".\", \"_\" or \"-\"", u.Name)
		} else if users[u.Name] {
			add(p+"name", "user %q is configured twice", u.Name)
		}
		users[u.Name] = true
		if !slices.Contains(SNMPAuthProtocols, u.Auth) {
			add(p+"auth", "%q is not an authentication protocol, want one of %s", u.Auth, quoteList(SNMPAuthProtocols))
		}
		if !slices.Contains(SNMPPrivProtocols, u.Priv) {
			add(p+"priv", "%q is not a privacy protocol, want one of %s", u.Priv, quoteList(SNMPPrivProtocols))
		}
		for _, k := range []struct{ name, v string }{{"auth_key", u.AuthKey}, {"priv_key", u.PrivKey}} {
			if len(k.v) < 8 || len(k.v) > 255 {
				add(p+k.name, "a key of %d characters, want 8 to 255 (RFC 3414)", len(k.v))
			}
		}
	}
	if len(s.Traps) > 0 && !s.Enabled() {
		add("snmp.trap", "receivers are set, but the agent is off: set snmp.community or an snmp.user")
	}
	for i, t := range s.Traps {
		p := "snmp.trap[" + strconv.Itoa(i) + "]."
		host, port, err := net.SplitHostPort(t.Target)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			add(p+"target", "%q is not a receiver, want host:port, e.g. \"192.0.2.5:162\"", t.Target)
		}
		switch {
		case (t.Community == "") == (t.User == ""):
			add(p+"community", "set either community (SNMPv2c) or user (SNMPv3)")
		case t.User != "" && !users[t.User]:
			add(p+"user", "%q is not one of the snmp.user names", t.User)
		case t.Community != "" && len(t.Community) > 255:
			add(p+"community", "want at most 255 characters")
		}
	}
}
