package config

import (
	"slices"
	"strings"
	"testing"
)

func TestEmbeddedProfiles(t *testing.T) {
	names := ProfileNames()
	if want := []string{"fw-7565", "fw-8865", "generic", "iec-516p", "net-1715vd4n", "nsp-1096", "qemu", "qemu-igb"}; !slices.Equal(names, want) {
		t.Errorf("ProfileNames() = %v, want %v", names, want)
	}
	for _, name := range names {
		p, err := LookupProfile(name)
		if err != nil {
			t.Errorf("profile %s is invalid:\n%v", name, err)
			continue
		}
		if p.Description == "" {
			t.Errorf("profile %s has no description", name)
		}
		if m := p.ManagementPort(); m == nil || m.Name != "MGMT" {
			t.Errorf("profile %s management port = %v, want MGMT", name, m)
		}
	}

	q, _ := LookupProfile("qemu")
	wantPCI := map[string]string{"MGMT": "0000:00:03.0", "LAN1": "0000:00:04.0", "LAN2": "0000:00:05.0", "LAN3": "0000:00:06.0", "LAN4": "0000:00:07.0"}
	for name, pci := range wantPCI {
		if p := q.Port(name); p == nil || p.PCI != pci {
			t.Errorf("qemu port %s = %+v, want pci %s", name, p, pci)
		}
	}
	if bp := q.BypassPair("pair2"); bp == nil || !slices.Equal(bp.Ports, []string{"LAN3", "LAN4"}) || bp.Backend != "sim" {
		t.Errorf("qemu pair2 = %+v", bp)
	}
	g, _ := LookupProfile("generic")
	if p := g.Port("LAN4"); p == nil || p.Ifname != "eth4" || p.PCI != "" {
		t.Errorf("generic LAN4 = %+v, want ifname eth4", p)
	}
	if len(g.BypassPairs) != 0 || !strings.Contains(g.Description, "probe order") {
		t.Errorf("generic profile = %+v", g)
	}

	// Lookups hand out copies.
	q.Ports[0].Name = "changed"
	if q2, _ := LookupProfile("qemu"); q2.Ports[0].Name != "MGMT" {
		t.Error("LookupProfile copies share memory")
	}
	if _, err := LookupProfile("nope"); err == nil || !strings.Contains(err.Error(), `unknown platform "nope"`) {
		t.Errorf("LookupProfile(nope) = %v", err)
	}
}

func TestProfileValidation(t *testing.T) {
	const head = "name = \"box\"\ndescription = \"d\"\n"
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"valid", head + "[[port]]\nname = \"M\"\nifname = \"eth0\"\nmanagement = true\n", nil},
		{"no ports", head, []string{
			`profiles/box.toml:1: port: no ports, want at least one [[port]]`}},
		{"bad name", "name = \"Box 1\"\n[[port]]\nname = \"M\"\nifname = \"eth0\"\nmanagement = true\n", []string{
			`profiles/box.toml:1: name: "Box 1" is not a valid profile name, want 1-32 of a-z, 0-9 and "-"`}},
		{"duplicate port and no management", head + "[[port]]\nname = \"A\"\nifname = \"eth0\"\n[[port]]\nname = \"A\"\nifname = \"eth1\"\n", []string{
			`profiles/box.toml:3: port: no port has management = true, want exactly one`,
			`profiles/box.toml:7: port[1].name: duplicate port name "A", already used by port[0]`}},
		{"two management ports", head + "[[port]]\nname = \"A\"\nifname = \"eth0\"\nmanagement = true\n[[port]]\nname = \"B\"\nifname = \"eth1\"\nmanagement = true\n", []string{
			`profiles/box.toml:10: port[1].management: port "B" is a second management port (port[0] is one), want exactly one`}},
		{"pci syntax and missing locator", head + "[[port]]\nname = \"M\"\npci = \"00:04.0\"\nmanagement = true\n[[port]]\nname = \"L\"\n", []string{
			`profiles/box.toml:5: port[0].pci: "00:04.0" is not a PCI address, want domain:bus:device.function in lower-case hex such as "0000:00:04.0"`,
			`profiles/box.toml:7: port[1]: port "L" has neither pci, pci_id nor ifname, want at least one`}},
		{"duplicate pci and ifname", head + "[[port]]\nname = \"M\"\npci = \"0000:00:04.0\"\nifname = \"e0\"\nmanagement = true\n" +
			"[[port]]\nname = \"L\"\npci = \"0000:00:04.0\"\nifname = \"e0\"\n", []string{
			`profiles/box.toml:10: port[1].pci: PCI address 0000:00:04.0 is already used by port[0]`,
			`profiles/box.toml:11: port[1].ifname: interface e0 is already used by port[0]`}},
		{"bad ifname", head + "[[port]]\nname = \"M\"\nifname = \"eth0:1\"\nmanagement = true\n", []string{
			`profiles/box.toml:5: port[0].ifname: "eth0:1" is not a valid interface name, want 1-15 characters without "/", ":" or spaces`}},
		{"bypass pairs", head + "[[port]]\nname = \"M\"\nifname = \"e0\"\nmanagement = true\n[[port]]\nname = \"A\"\nifname = \"e1\"\n[[port]]\nname = \"B\"\nifname = \"e2\"\n" +
			"[[bypass_pair]]\nname = \"p\"\nports = [\"A\", \"X\"]\nbackend = \"relay\"\n" +
			"[[bypass_pair]]\nname = \"p\"\nports = [\"M\", \"A\"]\nbackend = \"sim\"\n" +
			"[[bypass_pair]]\nname = \"q\"\nports = [\"B\", \"B\"]\nbackend = \"none\"\n" +
			"[[bypass_pair]]\nname = \"r\"\nports = [\"A\"]\nbackend = \"none\"\n", []string{
			`profiles/box.toml:15: bypass_pair[0].ports[1]: unknown port "X" (profile "box" has M, A, B)`,
			`profiles/box.toml:16: bypass_pair[0].backend: unknown backend "relay", want one of "sim", "none", "superio", "smbus", "ioport", "sysfs", "bpctl", "exec", "lanner" or "ixgbe"`,
			`profiles/box.toml:18: bypass_pair[1].name: duplicate bypass pair name "p", already used by bypass_pair[0]`,
			`profiles/box.toml:19: bypass_pair[1].ports[0]: "M" is the management port, want a data port`,
			`profiles/box.toml:19: bypass_pair[1].ports[1]: port "A" is already in bypass pair "p"`,
			`profiles/box.toml:23: bypass_pair[2].ports[1]: port "B" is listed twice, want two distinct ports`,
			`profiles/box.toml:27: bypass_pair[3].ports: has 1 ports, want exactly two`,
			`profiles/box.toml:27: bypass_pair[3].ports[0]: port "A" is already in bypass pair "p"`}},
		{"unknown key", head + "vendor = \"x\"\n[[port]]\nname = \"M\"\nifname = \"e0\"\nmanagement = true\nspeed = 1000\n", []string{
			`profiles/box.toml:3: vendor: unknown key, want one of name, description, port, bypass_pair, bypass_budget`,
			`profiles/box.toml:8: port[0].speed: unknown key, want one of name, pci, pci_id, nth, ifname, management`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProfile("profiles/box.toml", []byte(tt.text))
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestProfilePCIID(t *testing.T) {
	text := "name = \"box\"\ndescription = \"d\"\n" +
		"[[port]]\nname = \"M\"\npci_id = \"8086:1521\"\nmanagement = true\n" +
		"[[port]]\nname = \"A\"\npci_id = \"8086:10FB\"\n" +
		"[[port]]\nname = \"B\"\nnth = 2\nifname = \"eth2\"\n" +
		"[[port]]\nname = \"C\"\npci_id = \"8086:1521\"\n"
	_, err := ParseProfile("profiles/box.toml", []byte(text))
	want := []string{
		`profiles/box.toml:9: port[1].pci_id: "8086:10FB" is not a PCI ID, want vendor:device in lower-case hex such as "8086:10fb"`,
		`profiles/box.toml:12: port[2].nth: is set without pci_id, want pci_id too`,
		`profiles/box.toml:16: port[3].pci_id: function 0 of 8086:1521 is already port[0]`,
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v\nlacks %s", err, w)
		}
	}
}
