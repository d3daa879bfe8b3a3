package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const bypassHead = "name = \"box\"\ndescription = \"d\"\n" +
	"[[port]]\nname = \"MGMT\"\nifname = \"e0\"\nmanagement = true\n" +
	"[[port]]\nname = \"LAN1\"\nifname = \"e1\"\n" +
	"[[port]]\nname = \"LAN2\"\nifname = \"e2\"\n" // 12 lines

func TestBypassBackendValidation(t *testing.T) {
	pair := func(backend, rest string) string {
		return bypassHead + "[[bypass_pair]]\nname = \"pair1\"\nports = [\"LAN1\", \"LAN2\"]\nbackend = \"" + backend + "\"\n" + rest
	}
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"sim ok", pair("sim", "timer = \"1s\"\n[bypass_pair.sim]\ntimer_unit = \"100ms\"\n"), nil},
		{"superio ok", pair("superio", "register_map = \"vendor\"\n[bypass_pair.superio]\nlogical_device = 8\n"+
			"[bypass_pair.registers]\nstate.normal = [{reg = 0xf1, mask = 0x10, value = 0x10}]\n"+
			"state.bypass = [{reg = 0xf1, mask = 0x10, value = 0}]\ntimer = {reg = 0xf6, unit = \"1s\", max = 255}\n"), nil},
		{"missing map ok", pair("smbus", "register_map = \"missing\"\n[bypass_pair.smbus]\naddress = 0x55\n"), nil},
		{"lanner ok", pair("lanner", "register_map = \"vendor\"\n[bypass_pair.lanner]\nboard = \"mb-887x\"\nslot = 2\npair = 1\n"), nil},
		{"lanner onboard ok", pair("lanner", "register_map = \"vendor\"\n[bypass_pair.lanner]\nboard = \"onboard\"\npair = 2\nbus = 3\n"), nil},
		{"lanner slot, pair and bus", pair("lanner", "register_map = \"vendor\"\n[bypass_pair.lanner]\nboard = \"mb-887x\"\nslot = 5\npair = 9\nbus = -1\n"), []string{
			`profiles/box.toml:20: bypass_pair[0].lanner.slot: board "mb-887x" (MB-8875, MB-8876, MB-8865, MB-8866, MB-8877, MB-8771, NCB-5210) has slots 1..4, not 5`,
			`profiles/box.toml:21: bypass_pair[0].lanner.pair: 9 is out of range, want 1..8 (a module has up to 8 pairs)`,
			`profiles/box.toml:22: bypass_pair[0].lanner.bus: -1 is out of range, want 0..1023 (/dev/i2c-N)`}},
		{"lanner board", pair("lanner", "register_map = \"vendor\"\n[bypass_pair.lanner]\nboard = \"fw-8865\"\npair = 1\n"), []string{
			`profiles/box.toml:19: bypass_pair[0].lanner.board: unknown board "fw-8865", want one of mb-8865ext, mb-887x, mb-8895, mb-9655, ncb-2510, ncb-5220, ncb-6210, onboard`}},
		{"ixgbe ok", pair("ixgbe", "register_map = \"vendor\"\nos_off = \"disconnect\"\npower_restore = \"bypass\"\n"), nil},
		{"ixgbe section", pair("ixgbe", "register_map = \"vendor\"\nos_off = \"off\"\n[bypass_pair.lanner]\nboard = \"onboard\"\npair = 1\n"), []string{
			`profiles/box.toml:18: bypass_pair[0].os_off: unknown state "off", want "normal", "bypass" or "disconnect", or "" to leave the hardware's default`,
			`profiles/box.toml:19: bypass_pair[0].lanner: is set but backend is "ixgbe", want no [lanner] section`}},
		{"unknown backend", pair("relay9", ""), []string{
			`profiles/box.toml:16: bypass_pair[0].backend: unknown backend "relay9", want one of "sim", "none", "superio", "smbus", "ioport", "sysfs", "bpctl", "exec", "lanner" or "ixgbe"`}},
		{"register out of range", pair("superio", "register_map = \"vendor\"\n[bypass_pair.registers]\n"+
			"state.normal = [{reg = 0x1f1, mask = 0x10, value = 0x10}]\n"+
			"state.bypass = [{reg = 0xf1, mask = 0x10, value = 0x20}]\n"), []string{
			`profiles/box.toml:19: bypass_pair[0].registers.state.normal[0].reg: 0x1f1 is out of range, want 0x00..0xff`,
			`profiles/box.toml:20: bypass_pair[0].registers.state.bypass[0].value: 0x20 sets bits outside mask 0x10`}},
		{"i2c address", pair("smbus", "register_map = \"missing\"\n[bypass_pair.smbus]\naddress = 0x80\n"), []string{
			`profiles/box.toml:19: bypass_pair[0].smbus.address: 0x80 is out of range, want a 7-bit address 0x03..0x77`}},
		{"ioport range and timer", pair("ioport", "register_map = \"operator\"\n[bypass_pair.registers]\n"+
			"state.normal = [{reg = 0x8e3, mask = 1, value = 1}]\nstate.bypass = [{reg = 0x10000, mask = 1, value = 0}]\n"+
			"timer = {reg = 0x8e7, max = 300}\n"), []string{
			`profiles/box.toml:20: bypass_pair[0].registers.state.bypass[0].reg: 0x10000 is out of range, want 0x00..0xffff`,
			`profiles/box.toml:21: bypass_pair[0].registers.timer.unit: "0s" is not positive, want the time of one count such as "1s"`,
			`profiles/box.toml:21: bypass_pair[0].registers.timer.max: 300 is out of range, want 1..255 counts`}},
		{"no state writes", pair("superio", "register_map = \"vendor\"\n"), []string{
			`profiles/box.toml:13: bypass_pair[0].registers.state.bypass: no register writes, want the bits that put the relay in bypass (or register_map = "missing")`,
			`profiles/box.toml:13: bypass_pair[0].registers.state.normal: no register writes, want the bits that put the relay in normal (or register_map = "missing")`}},
		{"map origin", pair("superio", "register_map = \"guess\"\n"), []string{
			`profiles/box.toml:17: bypass_pair[0].register_map: "guess" is not a register map origin, want "vendor", "operator" or "missing"`}},
		{"wrong section and states", pair("sim", "power_off = \"open\"\n[bypass_pair.smbus]\naddress = 0x55\n"), []string{
			`profiles/box.toml:17: bypass_pair[0].power_off: unknown state "open", want "normal", "bypass" or "disconnect", or "" to leave the hardware's default`,
			`profiles/box.toml:18: bypass_pair[0].smbus: is set but backend is "sim", want no [smbus] section`}},
		{"sysfs", pair("sysfs", "register_map = \"vendor\"\n[bypass_pair.sysfs]\ndir = \"/proc/net/bypass/bypass_{port}\"\n"+
			"state.normal = [{file = \"../bypass\", value = \"off\"}]\nstate.bypass = [{file = \"bypass\", value = \"on\"}]\n"), []string{
			`profiles/box.toml:19: bypass_pair[0].sysfs.dir: unknown placeholder {port} in "/proc/net/bypass/bypass_{port}", want {if} or {if2}`,
			`profiles/box.toml:20: bypass_pair[0].sysfs.state.normal[0].file: "../bypass" is not a file name in the driver's directory`}},
		{"exec", pair("exec", "register_map = \"vendor\"\n[bypass_pair.exec]\nstate.normal = [\"bpctl\", \"set_bypass\", \"{if}\", \"off\"]\n"+
			"state.bypass = [\"/usr/bin/bpctl\", \"set_bypass\", \"{iface}\", \"on\"]\n"), []string{
			`profiles/box.toml:19: bypass_pair[0].exec.state.normal[0]: "bpctl" is not an absolute path, want the tool's full path (there is no shell or $PATH on the appliance)`,
			`profiles/box.toml:20: bypass_pair[0].exec.state.bypass[2]: unknown placeholder {iface}, want {if}, {if2}, {pair}`}},
		{"pair naming a missing port", pair("sim", "")[:0] + bypassHead +
			"[[bypass_pair]]\nname = \"pair1\"\nports = [\"LAN1\", \"LAN9\"]\nbackend = \"sim\"\n", []string{
			`profiles/box.toml:15: bypass_pair[0].ports[1]: unknown port "LAN9" (profile "box" has MGMT, LAN1, LAN2)`}},
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

func TestDecodeProfile(t *testing.T) {
	text := bypassHead + "[[bypass_pair]]\nname = \"pair1\"\nports = [\"LAN1\", \"LAN2\"]\nbackend = \"sim\"\n" +
		"[[bypass_pair]]\nname = \"pair2\"\nports = [\"LAN1\", \"LAN2\"]\nbackend = \"warp\"\n"
	p, err := DecodeProfile("x.toml", []byte(text))
	var ve *ValidationError
	if !errors.As(err, &ve) || p == nil || len(p.BypassPairs) != 2 {
		t.Fatalf("DecodeProfile = %v, %v", p, err)
	}
	for _, fe := range ve.Errors {
		if !strings.HasPrefix(fe.Field, "bypass_pair[1]") {
			t.Errorf("problem outside pair2: %v", fe)
		}
	}
	if p, err := DecodeProfile("x.toml", []byte("name = [")); p != nil || err == nil {
		t.Errorf("unreadable TOML: %v, %v", p, err)
	}
}

func TestVendorProfiles(t *testing.T) {
	for name, wantBackend := range map[string]string{"iec-516p": "superio", "nsp-1096": "superio", "net-1715vd4n": "ioport", "fw-8865": "lanner", "fw-7565": "superio", "qemu": "sim"} {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(p.BypassPairs) == 0 {
			t.Errorf("%s has no bypass pairs", name)
		}
		for _, bp := range p.BypassPairs {
			if bp.Backend != wantBackend {
				t.Errorf("%s %s backend %q, want %q", name, bp.Name, bp.Backend, wantBackend)
			}
			// No compiled-in profile guesses a register map: a hardware
			// pair is either driven from a published protocol (vendor)
			// or missing.
			want := "missing"
			switch wantBackend {
			case "sim":
				want = ""
			case "lanner":
				want = "vendor"
			}
			if name == "fw-7565" {
				want = "vendor" // Lanner's MB-7565 driver is public
			}
			if bp.RegisterMap != want {
				t.Errorf("%s %s register_map %q, want %q", name, bp.Name, bp.RegisterMap, want)
			}
		}
	}
	n, _ := LookupProfile("nsp-1096")
	if len(n.Ports) != 10 || n.Port("LAN10").PCI != "0000:08:00.3" {
		t.Errorf("nsp-1096 ports = %v", n.PortNames())
	}
}
