package vm

import (
	"strings"
	"testing"
)

func TestArgs(t *testing.T) {
	bios := strings.Join(Args(Options{Image: "x.img", DataNICs: 2, StatusPort: 8480, HTTPPort: 8488, Forwards: map[int]int{9001: 8081}, UDPForwards: map[int]int{9161: 161}, SerialLog: "s.log"}, ""), " ")
	for _, want := range []string{
		"-smp 2",
		"-accel tcg,thread=single",
		"file=x.img,format=raw,if=ide",
		"-device i6300esb",
		"hostfwd=tcp:127.0.0.1:8480-:443",
		"hostfwd=tcp:127.0.0.1:8488-:80",
		"hostfwd=tcp:127.0.0.1:9001-:8081",
		"hostfwd=udp:127.0.0.1:9161-:161",
		"virtio-net-pci,netdev=mgmt,addr=0x3",
		"virtio-net-pci,netdev=lan1,addr=0x4",
		"virtio-net-pci,netdev=lan2,addr=0x5",
		"-serial file:s.log",
	} {
		if !strings.Contains(bios, want) {
			t.Errorf("args lack %q:\n%s", want, bios)
		}
	}
	if strings.Contains(bios, "pflash") || strings.Contains(bios, "lan3") {
		t.Errorf("legacy BIOS args: %s", bios)
	}
	uefi := strings.Join(Args(Options{Image: "x.img", UEFI: true}, "/tmp/vars.fd"), " ")
	if !strings.Contains(uefi, "readonly=on,file="+ovmfCode) || !strings.Contains(uefi, "file=/tmp/vars.fd") {
		t.Errorf("UEFI args lack OVMF: %s", uefi)
	}
	if !strings.Contains(uefi, "-serial mon:stdio") {
		t.Errorf("interactive args lack the serial console on stdio: %s", uefi)
	}
}

// TestDataAddrs: data ports placed at given functions, function 0 of a
// shared slot multifunction; addresses QEMU would refuse are refused first.
func TestDataAddrs(t *testing.T) {
	o := Options{Image: "x.img", DataNICs: 4, DataModels: []string{"igb", "igb", "igb", "e1000e"}, DataAddrs: []string{"4.0", "04.1", "0x6", "07.0"}}
	if err := o.checkAddrs(); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(Args(o, ""), " ")
	for _, want := range []string{
		"igb,netdev=lan1,addr=4.0,multifunction=on",
		"igb,netdev=lan2,addr=04.1 ",
		"igb,netdev=lan3,addr=0x6 ",
		"e1000e,netdev=lan4,addr=07.0 ",
	} {
		if !strings.Contains(args+" ", want) {
			t.Errorf("args lack %q:\n%s", want, args)
		}
	}
	for addrs, want := range map[[2]string]string{
		{"05.1", "05.2"}: "none at function 0",
		{"5.x", "06.0"}:  `PCI address "5.x": function`,
		{"zz", "06.0"}:   `PCI address "zz": slot`,
	} {
		o := Options{DataNICs: 2, DataAddrs: addrs[:]}
		if err := o.checkAddrs(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", addrs, err, want)
		}
	}
}

func TestCables(t *testing.T) {
	cables, err := ParseCables("LAN3=LAN1, LAN4=LAN2")
	if err != nil || len(cables) != 2 || cables[0] != (Cable{3, 1}) || cables[1] != (Cable{4, 2}) {
		t.Fatalf("ParseCables = %v, %v", cables, err)
	}
	o := Options{Image: "x.img", DataNICs: 4, Cables: cables, sockDir: "/run/v"}
	if err := o.CheckCables(); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(Args(o, ""), " ")
	for _, want := range []string{
		// LAN3 and LAN1 send into each other's socket.
		"dgram,id=lan3,local.type=unix,local.path=/run/v/cable0a.sock,remote.type=unix,remote.path=/run/v/cable0b.sock",
		"dgram,id=lan1,local.type=unix,local.path=/run/v/cable0b.sock,remote.type=unix,remote.path=/run/v/cable0a.sock",
		"dgram,id=lan4,local.type=unix,local.path=/run/v/cable1a.sock,remote.type=unix,remote.path=/run/v/cable1b.sock",
		"dgram,id=lan2,local.type=unix,local.path=/run/v/cable1b.sock,remote.type=unix,remote.path=/run/v/cable1a.sock",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q:\n%s", want, args)
		}
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{DataNICs: 4, Cables: []Cable{{1, 1}}}, "joins LAN1 to itself"},
		{Options{DataNICs: 4, Cables: []Cable{{1, 5}}}, "LAN5 is not a data port of the VM (LAN1 to LAN4)"},
		{Options{DataNICs: 4, Cables: []Cable{{3, 1}, {4, 1}}}, "LAN1 is already in cable LAN3=LAN1"},
		{Options{DataNICs: 4, Wires: []Wire{{1, 2}}, Cables: []Cable{{3, 1}}}, "LAN1 is already wired to the host"},
	} {
		if err := tc.o.CheckCables(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.o.Cables, err, tc.want)
		}
	}
	for _, bad := range []string{"LAN3", "LAN3=eth1", "3=1", "LAN3=LANx"} {
		if _, err := ParseCables(bad); err == nil {
			t.Errorf("ParseCables(%q) accepted", bad)
		}
	}
}
