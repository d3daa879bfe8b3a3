package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
)

func TestFlags(t *testing.T) {
	o, err := parseFlags([]string{"-sim-pair", "pair0=seg0,ncpt-a,ncpt-b", "-hold-down", "2s", "-budget", "150ms", "-log", "", "-overrides", ""})
	if err != nil || len(o.simPairs) != 1 || o.d.Policy.HoldDown != 2*time.Second || o.d.Budget != 150*time.Millisecond || o.d.JournalPath != "" {
		t.Fatalf("%+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"-budget", "1ms"}); err == nil {
		t.Error("1ms budget accepted")
	}
	if _, err := parseFlags([]string{"extra"}); err == nil {
		t.Error("extra argument accepted")
	}
	o.simPairs = []string{"pair0=seg0,ncpt-a,ncpt-a"}
	if _, _, err := setup(o); err == nil || !strings.Contains(err.Error(), "two interfaces") {
		t.Errorf("sim pair with one interface twice: %v", err)
	}
}

// TestInvalidProfile: an operator profile naming an unknown backend, a
// register out of range and a missing port is refused with the fields
// named; bypassd comes up in failsafe, unhealthy, driving nothing it
// cannot trust.
func TestInvalidProfile(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "ncpos.toml")
	os.WriteFile(cfgPath, []byte("platform = \"nsp-1096\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\nbypass = \"pair1\"\n"), 0o644)
	profiles := filepath.Join(dir, "profiles")
	os.MkdirAll(profiles, 0o755)
	os.WriteFile(filepath.Join(profiles, "nsp-1096.toml"), []byte(`name = "nsp-1096"
description = "operator copy"
[[port]]
name = "MGMT"
ifname = "eth0"
management = true
[[port]]
name = "LAN1"
ifname = "eth1"
[[port]]
name = "LAN2"
ifname = "eth2"
[[port]]
name = "LAN3"
ifname = "eth3"
[[bypass_pair]]
name = "pair1"
ports = ["LAN1", "LAN2"]
backend = "relayboard"
[[bypass_pair]]
name = "pair2"
ports = ["LAN3", "LAN7"]
backend = "ioport"
register_map = "operator"
[bypass_pair.registers]
state.normal = [{reg = 0x18e30, mask = 1, value = 1}]
state.bypass = [{reg = 0x8e3, mask = 1, value = 0}]
`), 0o644)
	o, err := parseFlags([]string{"-config", cfgPath, "-profile-dir", profiles, "-log", "", "-overrides", ""})
	if err != nil {
		t.Fatal(err)
	}
	o.sysClassNet = t.TempDir()
	sup, set, err := setup(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`nsp-1096.toml:19: bypass_pair[0].backend: unknown backend "relayboard"`,
		`nsp-1096.toml:22: bypass_pair[1].ports[1]: unknown port "LAN7"`,
		`nsp-1096.toml:26: bypass_pair[1].registers.state.normal[0].reg: 0x18e30 is out of range, want 0x00..0xffff`,
	} {
		if !strings.Contains(set.Failsafe, want) {
			t.Errorf("refusal does not name %q:\n%s", want, set.Failsafe)
		}
	}
	for _, p := range set.Pairs {
		if p.Backend != nil {
			t.Errorf("pair %s was opened from a refused section", p.Name)
		}
	}
	sup.Start(t.Context())
	if rep := sup.Report(); !rep.Live.Live || !health.Has(rep.Conditions, health.ProfileRefused) {
		t.Errorf("report %+v, want live with profile_refused", rep)
	}
	for _, p := range sup.Status().Pairs {
		if p.Desired != "bypass" {
			t.Errorf("pair %s desired %s in failsafe", p.Name, p.Desired)
		}
	}
}

// TestLoadHoldDowns: both hold-downs come from the configuration, and a
// flag given on the command line is in force over it.
func TestLoadHoldDowns(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "ncpos.toml")
	os.WriteFile(cfgPath, []byte("[bypass]\nhold_down = \"7s\"\nstart_hold_down = \"2s\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\n"), 0o644)
	for _, c := range []struct {
		flags           []string
		hold, startHold time.Duration
	}{
		{nil, 7 * time.Second, 2 * time.Second},
		{[]string{"-start-hold-down", "300ms"}, 7 * time.Second, 300 * time.Millisecond},
		{[]string{"-hold-down", "3s"}, 3 * time.Second, 2 * time.Second},
		{[]string{"-hold-down", "500ms"}, 500 * time.Millisecond, 500 * time.Millisecond},
		{[]string{"-hold-down", "500ms", "-start-hold-down", "4s"}, 500 * time.Millisecond, 4 * time.Second},
	} {
		o, err := parseFlags(append([]string{"-config", cfgPath, "-log", "", "-overrides", ""}, c.flags...))
		if err != nil {
			t.Fatal(err)
		}
		set, err := load(o)
		if err != nil {
			t.Fatal(err)
		}
		if set.Policy.HoldDown != c.hold || set.Policy.StartHoldDown != c.startHold {
			t.Errorf("flags %q: hold-down %v, at start %v; want %v, %v", c.flags, set.Policy.HoldDown, set.Policy.StartHoldDown, c.hold, c.startHold)
		}
	}
}
