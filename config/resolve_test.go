package config

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSysfs builds a /sys lookalike under a temporary directory and returns
// its class/net directory. devs maps interface names to the device directory
// below devices/ that owns them ("" for a virtual interface without a
// device link), e.g. "pci0000:00/0000:00:04.0/virtio1". As in real sysfs,
// class/net/<if> is a symlink to the interface's directory under the device,
// and <if>/device is a relative symlink back to the device.
func fakeSysfs(t *testing.T, devs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	classNet := filepath.Join(root, "class", "net")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(classNet, 0o755))
	for ifname, dev := range devs {
		devDir := filepath.Join(root, "devices", "virtual")
		if dev != "" {
			devDir = filepath.Join(root, "devices", dev)
		}
		ifDir := filepath.Join(devDir, "net", ifname)
		must(os.MkdirAll(ifDir, 0o755))
		if dev != "" {
			must(os.Symlink(filepath.Join("..", ".."), filepath.Join(ifDir, "device")))
		}
		rel, err := filepath.Rel(classNet, ifDir)
		must(err)
		must(os.Symlink(rel, filepath.Join(classNet, ifname)))
	}
	return classNet
}

func TestResolve(t *testing.T) {
	qemu, err := LookupProfile("qemu")
	if err != nil {
		t.Fatal(err)
	}
	generic, err := LookupProfile("generic")
	if err != nil {
		t.Fatal(err)
	}
	fallback := &Profile{Name: "fb", Ports: []Port{
		{Name: "MGMT", PCI: "0000:00:19.0", Ifname: "eno1", Management: true},
		{Name: "LAN1", PCI: "0000:02:00.0", Ifname: "eth1"},
		{Name: "LAN2", PCI: "0000:03:00.0", Ifname: "eth1"},
	}}
	virtio := func(pci string, n string) string { return "pci0000:00/" + pci + "/virtio" + n }

	tests := []struct {
		name    string
		profile *Profile
		devs    map[string]string
		want    map[string]string
		wantErr string
	}{
		{
			name:    "qemu virtio, names not in panel order",
			profile: qemu,
			devs: map[string]string{
				"lo":   "",
				"eth0": virtio("0000:00:05.0", "2"),
				"eth1": virtio("0000:00:03.0", "0"),
				"eth2": virtio("0000:00:04.0", "1"),
				"eth3": virtio("0000:00:07.0", "4"),
				"eth4": virtio("0000:00:06.0", "3"),
			},
			want: map[string]string{"MGMT": "eth1", "LAN1": "eth2", "LAN2": "eth0", "LAN3": "eth4", "LAN4": "eth3"},
		},
		{
			name:    "qemu missing ports are named",
			profile: qemu,
			devs: map[string]string{
				"eth0": virtio("0000:00:03.0", "0"),
				"eth1": virtio("0000:00:04.0", "1"),
				"eth2": virtio("0000:00:05.0", "2"),
				"eth9": "pci0000:00/0000:00:1c.0/0000:02:00.0", // a NIC the profile does not know
			},
			want:    map[string]string{"MGMT": "eth0", "LAN1": "eth1", "LAN2": "eth2"},
			wantErr: "LAN3: no interface with pci 0000:00:06.0; LAN4: no interface with pci 0000:00:07.0",
		},
		{
			name:    "generic by ifname",
			profile: generic,
			devs:    map[string]string{"eth0": "pci0000:00/0000:00:19.0", "eth1": "", "eth2": "pci0000:00/0000:00:1c.0/0000:02:00.0"},
			want:    map[string]string{"MGMT": "eth0", "LAN1": "eth1", "LAN2": "eth2"},
			wantErr: "LAN3: no interface with ifname eth3; LAN4: no interface with ifname eth4",
		},
		{
			name:    "pci behind a bridge, ifname fallback, ifname taken",
			profile: fallback,
			devs: map[string]string{
				"eno1": "pci0000:00/0000:00:1f.6", // wrong PCI: found by ifname
				"eth1": "pci0000:00/0000:00:1c.0/0000:02:00.0",
			},
			want:    map[string]string{"MGMT": "eno1", "LAN1": "eth1"},
			wantErr: "LAN2: no interface with pci 0000:03:00.0 or ifname eth1 (taken by LAN1)",
		},
		{
			name:    "two interfaces on one PCI function",
			profile: fallback,
			devs: map[string]string{
				"eno1": "pci0000:00/0000:00:19.0",
				"p1":   "pci0000:00/0000:00:1c.0/0000:02:00.0",
				"p2":   "pci0000:00/0000:00:1c.0/0000:02:00.0",
				"eth1": "pci0000:00/0000:00:1c.1/0000:03:00.0",
			},
			want:    map[string]string{"MGMT": "eno1", "LAN2": "eth1"},
			wantErr: "LAN1: pci 0000:02:00.0 has several interfaces (p1, p2)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := fakeSysfs(t, tt.devs)
			got, err := tt.profile.Resolve(dir)
			if !maps.Equal(got, tt.want) {
				t.Errorf("Resolve() = %v, want %v", got, tt.want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Resolve() error = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.HasSuffix(err.Error(), tt.wantErr) ||
				!strings.Contains(err.Error(), `platform "`+tt.profile.Name+`"`)):
				t.Errorf("Resolve() error = %v, want it to name the platform and end in %q", err, tt.wantErr)
			}
		})
	}
}

func TestResolveNoSysfs(t *testing.T) {
	p, _ := LookupProfile("qemu")
	m, err := p.Resolve(filepath.Join(t.TempDir(), "nope"))
	if err == nil || m != nil {
		t.Errorf("Resolve(missing dir) = %v, %v; want nil map and an error", m, err)
	}
}

// TestResolveByPCIID finds the FW-8865's ports by what they are: the nth
// 82599 function and the first I350, whatever bays the modules sit in.
func TestResolveByPCIID(t *testing.T) {
	net := fakeSysfs(t, map[string]string{
		"eth0": "pci0000:00/0000:00:01.0/0000:07:00.0", // I350, management
		"eth1": "pci0000:00/0000:00:02.0/0000:05:00.1", // 82599 in a later bay
		"eth2": "pci0000:00/0000:00:02.0/0000:05:00.0",
		"eth3": "pci0000:00/0000:00:03.0/0000:04:00.0",
		"eth4": "pci0000:00/0000:00:03.0/0000:04:00.1",
		"eth5": "pci0000:00/0000:00:01.0/0000:07:00.1", // second I350 port
	})
	root := filepath.Dir(filepath.Dir(net))
	for pci, id := range map[string][2]string{
		"pci0000:00/0000:00:01.0/0000:07:00.0": {"0x8086", "0x1521"}, "pci0000:00/0000:00:01.0/0000:07:00.1": {"0x8086", "0x1521"},
		"pci0000:00/0000:00:02.0/0000:05:00.0": {"0x8086", "0x10fb"}, "pci0000:00/0000:00:02.0/0000:05:00.1": {"0x8086", "0x10fb"},
		"pci0000:00/0000:00:03.0/0000:04:00.0": {"0x8086", "0x10fb"}, "pci0000:00/0000:00:03.0/0000:04:00.1": {"0x8086", "0x10fb"},
	} {
		os.WriteFile(filepath.Join(root, "devices", pci, "vendor"), []byte(id[0]+"\n"), 0o644)
		os.WriteFile(filepath.Join(root, "devices", pci, "device"), []byte(id[1]+"\n"), 0o644)
	}
	p, err := LookupProfile("fw-8865")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := p.Resolve(net)
	want := map[string]string{"MGMT": "eth0", "LAN1": "eth3", "LAN2": "eth4", "LAN3": "eth2", "LAN4": "eth1"}
	if err != nil || !maps.Equal(ports, want) {
		t.Errorf("fw-8865 ports %v (%v), want %v", ports, err, want)
	}
	// One module only: LAN3 and LAN4 are missing, and the error says
	// what was looked for.
	os.Remove(filepath.Join(net, "eth1"))
	os.Remove(filepath.Join(net, "eth2"))
	ports, err = p.Resolve(net)
	if err == nil || !strings.Contains(err.Error(), "LAN3: no interface with function 2 of pci_id 8086:10fb (2 found)") || ports["LAN2"] != "eth4" {
		t.Errorf("one module: %v, %v", ports, err)
	}
	// With the bus's list of functions, one without an interface (its
	// driver failed) still counts: LAN1 is missing, LAN2 does not move up.
	bus := filepath.Join(root, "bus", "pci", "devices")
	os.MkdirAll(bus, 0o755)
	for _, pci := range []string{"0000:00:01.0/0000:07:00.0", "0000:00:01.0/0000:07:00.1", "0000:00:02.0/0000:05:00.0",
		"0000:00:02.0/0000:05:00.1", "0000:00:03.0/0000:04:00.0", "0000:00:03.0/0000:04:00.1"} {
		dev := filepath.Join(root, "devices", "pci0000:00", pci)
		os.WriteFile(filepath.Join(dev, "class"), []byte("0x020000\n"), 0o644)
		os.Symlink(dev, filepath.Join(bus, filepath.Base(pci)))
	}
	os.Remove(filepath.Join(net, "eth3"))
	ports, err = p.Resolve(net)
	if err == nil || !strings.Contains(err.Error(), "LAN1: no interface with function 0 of pci_id 8086:10fb (4 found)") ||
		ports["LAN2"] != "eth4" || ports["LAN1"] != "" {
		t.Errorf("a function without its interface: %v, %v", ports, err)
	}

}
