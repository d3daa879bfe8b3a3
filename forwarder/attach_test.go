package forwarder

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/internal/testenv"
)

// TestAttachFallsBack attaches a program that takes frames in one buffer
// only (no frags) to a veth whose peer's MTU is past one page, which the
// veth driver refuses natively though its flags offer native XDP, as
// e1000e refuses above MTU 2026: auto attaches generic and says why
// native did not take; native fails with the driver's refusal.
func TestAttachFallsBack(t *testing.T) {
	if !testenv.InNetNS(t) {
		return
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "ncpt-fb0", MTU: 9000}, PeerName: "ncpt-fb1"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ncpt-fb0", "ncpt-fb1"} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetMTU(l, 9000); err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	l, err := netlink.LinkByName("ncpt-fb0")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.XDP,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // XDP_PASS
		License:      "GPL",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()

	lk, mode, refused, err := attachXDP(prog, l.Attrs().Index, XDPAuto)
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	lk.Close()
	if mode != XDPGeneric || refused == nil || !strings.HasPrefix(refused.Error(), "native: ") {
		t.Errorf("auto: attached %s, native refused with %v; want generic, and native's refusal", mode, refused)
	}
	t.Logf("auto: %s, native refused: %v", mode, refused)

	if lk, mode, _, err := attachXDP(prog, l.Attrs().Index, XDPNative); err == nil {
		lk.Close()
		t.Errorf("native: attached %s, want the driver's refusal", mode)
	}
	// Where native takes, nothing is said of a refusal.
	if err := netlink.LinkSetMTU(l, 1500); err != nil {
		t.Fatal(err)
	}
	peer, err := netlink.LinkByName("ncpt-fb1")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetMTU(peer, 1500); err != nil {
		t.Fatal(err)
	}
	lk, mode, refused, err = attachXDP(prog, l.Attrs().Index, XDPAuto)
	if err != nil {
		t.Fatal(err)
	}
	lk.Close()
	if mode != XDPNative || refused != nil {
		t.Errorf("auto at MTU 1500: attached %s, refused %v; want native", mode, refused)
	}
}
