package config

import (
	"strings"
	"testing"
)

func TestSetManagementAddress(t *testing.T) {
	static := Management{Address: "192.0.2.10/24", Gateway: "192.0.2.1", IPv6: IPv6Static, Address6: "2001:db8::10/64", Gateway6: "fe80::1"}
	out, err := SetManagementAddress("ncpos.toml", DefaultTOML(), static)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("ncpos.toml", out)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Management; m.DHCP || m.Address != static.Address || m.Gateway6 != "fe80::1" || m.Port != "MGMT" {
		t.Errorf("after the edit: %+v", m)
	}
	// Only the lines of those settings changed; the comments stay.
	before, after := strings.Split(string(DefaultTOML()), "\n"), strings.Split(string(out), "\n")
	if len(before) != len(after) {
		t.Fatalf("the edit changed the number of lines from %d to %d", len(before), len(after))
	}
	var changed []string
	for i := range before {
		if before[i] != after[i] {
			changed = append(changed, after[i])
		}
	}
	want := []string{`dhcp = false`, `address = "192.0.2.10/24"`, `gateway = "192.0.2.1"`, `ipv6 = "static"`, `address6 = "2001:db8::10/64"`, `gateway6 = "fe80::1"`}
	if strings.Join(changed, "\n") != strings.Join(want, "\n") {
		t.Errorf("changed lines:\n%s\nwant:\n%s", strings.Join(changed, "\n"), strings.Join(want, "\n"))
	}

	// A file without the table, or without some keys, gets them.
	seg := "\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\nbypass = \"pair1\"\n"
	min := "hostname = \"fw1\"\n\n[management]\nport = \"MGMT\"\n\n[status]\nport = 443\n" + seg
	out, err = SetManagementAddress("ncpos.toml", []byte(min), Management{DHCP: true, IPv6: IPv6Slaac})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "port = \"MGMT\"\ndhcp = true\naddress = \"\"\ngateway = \"\"\nipv6 = \"slaac\"") {
		t.Errorf("keys added:\n%s", out)
	}
	out, err = SetManagementAddress("ncpos.toml", []byte("hostname = \"fw1\"\n"+seg), Management{Address: "192.0.2.10/24", IPv6: IPv6Off})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Parse("ncpos.toml", out); err != nil || c.Management.Address != "192.0.2.10/24" || c.Management.IPv6 != IPv6Off {
		t.Errorf("table added:\n%s\n%v", out, err)
	}
	// An address the configuration refuses is named.
	if _, err := SetManagementAddress("ncpos.toml", DefaultTOML(), Management{Address: "192.0.2.300/24", IPv6: IPv6Slaac}); err == nil || !strings.Contains(err.Error(), "management.address") {
		t.Errorf("a wrong address: %v", err)
	}
	// Keys in another form are not rewritten.
	if _, err := SetManagementAddress("ncpos.toml", []byte("management = { dhcp = true }\n"+seg), Management{DHCP: true, IPv6: IPv6Slaac}); err == nil {
		t.Errorf("an inline table was edited")
	}
}
