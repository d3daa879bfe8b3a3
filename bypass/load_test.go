package bypass

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// fakeSysClassNet makes a /sys/class/net with interfaces whose device
// links point at the given PCI functions (virtio-style, one level below).
func fakeSysClassNet(t *testing.T, ifs map[string]string) string {
	root := t.TempDir()
	net := filepath.Join(root, "class", "net")
	for ifname, pci := range ifs {
		dev := filepath.Join(root, "devices", "pci0000:00", pci, "virtio-"+ifname)
		if err := os.MkdirAll(dev, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(net, ifname), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dev, filepath.Join(net, ifname, "device")); err != nil {
			t.Fatal(err)
		}
	}
	return net
}

func TestBuildQemu(t *testing.T) {
	cfg := config.Default() // qemu: seg1 = LAN1+LAN2 with pair1
	sys := fakeSysClassNet(t, map[string]string{"eth0": "0000:00:03.0", "eth1": "0000:00:04.0", "eth2": "0000:00:05.0", "eth3": "0000:00:06.0"})
	type opened struct {
		bp  config.BypassPair
		ifs [2]string
	}
	var got []opened
	open := func(bp config.BypassPair, ifs [2]string) (Backend, error) {
		got = append(got, opened{bp, ifs})
		return newFakeRelay(newClock(), bypassapi.Bypass), nil
	}
	set := Build(cfg, t.TempDir(), sys, open)
	if set.Failsafe != "" || !strings.Contains(set.Source, "compiled-in profile qemu") || len(set.Pairs) != 2 {
		t.Fatalf("setup %+v", set)
	}
	p1, p2 := set.Pairs[0], set.Pairs[1]
	if p1.Segment != "seg1" || p1.Ifnames != [2]string{"eth1", "eth2"} || p1.Backend == nil || p1.Timer.String() != "2s" ||
		p1.Defaults[bypassapi.PowerOff] != bypassapi.Bypass || p1.Defaults[bypassapi.TimerExpiry] != bypassapi.Bypass {
		t.Errorf("pair1 %+v", p1)
	}
	// LAN4 (0000:00:07.0) is absent: the sim relay needs both interfaces.
	if p2.Segment != "" || p2.Backend != nil || !strings.Contains(p2.Problem, "LAN4") {
		t.Errorf("pair2 %+v", p2)
	}
	if len(got) != 1 || got[0].bp.Name != "pair1" {
		t.Errorf("opened %+v", got)
	}
	if p1.TestPorts || p2.TestPorts {
		t.Errorf("test ports without [selftest]: pair1 %v, pair2 %v", p1.TestPorts, p2.TestPorts)
	}
	// With LAN3 and LAN4 the self-test's test ports, pair2 keeps them on
	// their cables.
	cfg, err := config.Parse("t.toml", []byte("platform = \"qemu\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\n"+
		"[selftest]\nports = [{test = \"LAN3\", segment_port = \"LAN1\"}, {test = \"LAN4\", segment_port = \"LAN2\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	set = Build(cfg, t.TempDir(), sys, open)
	if p1, p2 := set.Pairs[0], set.Pairs[1]; p1.TestPorts || !p2.TestPorts {
		t.Errorf("with [selftest] on LAN3 and LAN4: pair1 %v, pair2 %v, want pair2 only", p1.TestPorts, p2.TestPorts)
	}

	// A platform whose map is not public: reported, never opened.
	cfg2, err := config.Parse("x.toml", []byte("platform = \"iec-516p\"\n[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\nbypass = \"pair1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	set = Build(cfg2, "", sys, open)
	if len(got) != 0 || set.Failsafe != "" || len(set.Pairs) != 2 || !strings.Contains(set.Pairs[0].Problem, "superio register map of this platform is not public") {
		t.Errorf("iec-516p: opened %v, %+v", got, set.Pairs[0])
	}
}

// TestRelayStatesAgree: the states profiles may name (config) are
// bypassd's states, in their order.
func TestRelayStatesAgree(t *testing.T) {
	if got := bypassapi.StateNames(bypassapi.States); !slices.Equal(got, config.RelayStates) {
		t.Errorf("bypassd's states %q, the configuration's %q", got, config.RelayStates)
	}
}
