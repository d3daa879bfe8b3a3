package config

import (
	"strings"
	"testing"
)

func TestSNMP(t *testing.T) {
	good := "[snmp]\ncommunity = \"noc-read-7\"\n[[snmp.user]]\nname = \"noc\"\nauth = \"SHA-256\"\nauth_key = \"12345678\"\npriv = \"AES\"\npriv_key = \"abcdefgh\"\n" +
		"[[snmp.trap]]\ntarget = \"192.0.2.5:162\"\nuser = \"noc\"\n[[snmp.trap]]\ntarget = \"nms.example:162\"\ncommunity = \"traps\"\n" + seg
	c, err := Parse("ncpos.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if !c.SNMP.Enabled() || c.SNMP.Port != 161 || len(c.SNMP.Users) != 1 || c.SNMP.Traps[1].Target != "nms.example:162" {
		t.Errorf("parsed %+v", c.SNMP)
	}
	if Default().SNMP.Enabled() {
		t.Error("the agent is on by default")
	}
	for _, c := range []struct{ text, want string }{
		{"[snmp]\ncommunity = \"public\"", `ncpos.toml:2: snmp.community: a community of 6 characters is guessed easily, want at least 8`},
		{"[snmp]\nport = 0", `snmp.port: 0 is not a UDP port`},
		{"[[snmp.user]]\nname = \"a b\"\nauth = \"SHA-256\"\nauth_key = \"12345678\"\npriv = \"AES\"\npriv_key = \"12345678\"", `snmp.user[0].name: "a b" is not a user name`},
		{"[[snmp.user]]\nname = \"n\"\nauth = \"MD5\"\nauth_key = \"12345678\"\npriv = \"DES\"\npriv_key = \"1234\"", `snmp.user[0].auth: "MD5" is not an authentication protocol`},
		{"[[snmp.user]]\nname = \"n\"\nauth = \"MD5\"\nauth_key = \"12345678\"\npriv = \"DES\"\npriv_key = \"1234\"", `snmp.user[0].priv: "DES" is not a privacy protocol`},
		{"[[snmp.user]]\nname = \"n\"\nauth = \"MD5\"\nauth_key = \"12345678\"\npriv = \"DES\"\npriv_key = \"1234\"", `snmp.user[0].priv_key: a key of 4 characters, want 8 to 255`},
		{"[[snmp.trap]]\ntarget = \"192.0.2.5:162\"\ncommunity = \"x\"", `snmp.trap: receivers are set, but the agent is off`},
		{"[snmp]\ncommunity = \"noc-read-7\"\n[[snmp.trap]]\ntarget = \"192.0.2.5\"\ncommunity = \"x\"", `snmp.trap[0].target: "192.0.2.5" is not a receiver, want host:port`},
		{"[snmp]\ncommunity = \"noc-read-7\"\n[[snmp.trap]]\ntarget = \"192.0.2.5:162\"", `snmp.trap[0].community: set either community (SNMPv2c) or user (SNMPv3)`},
		{"[snmp]\ncommunity = \"noc-read-7\"\n[[snmp.trap]]\ntarget = \"192.0.2.5:162\"\nuser = \"ghost\"", `snmp.trap[0].user: "ghost" is not one of the snmp.user names`},
	} {
		got := strings.Join(problems(t, c.text+seg), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%q:\n got %s\nwant %s", c.text, got, c.want)
		}
	}
}
