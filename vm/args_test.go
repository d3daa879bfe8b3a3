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
