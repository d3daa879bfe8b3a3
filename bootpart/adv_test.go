package bootpart

import (
	"encoding/binary"
	"testing"
)

func TestADV(t *testing.T) {
	// An empty vector as syslinux's installer writes it: both copies
	// sealed, no items.
	var empty ADV
	empty.seal()
	if !advValid(empty[:advSize]) || !advValid(empty[advSize:]) {
		t.Fatal("a sealed ADV does not check out")
	}
	if binary.LittleEndian.Uint32(empty[0:]) != advMagic1 || binary.LittleEndian.Uint32(empty[508:]) != advMagic3 {
		t.Fatalf("magics % x", empty[:8])
	}
	a, ok, err := ParseADV(empty[:])
	if err != nil || !ok || a.BootOnce() != "" {
		t.Fatalf("empty ADV: ok %v, once %q, %v", ok, a.BootOnce(), err)
	}

	// Another item survives setting and clearing the boot-once.
	if err := a.Set(2, []byte("menu")); err != nil {
		t.Fatal(err)
	}
	if err := a.SetBootOnce("b"); err != nil {
		t.Fatal(err)
	}
	b, ok, _ := ParseADV(a[:])
	if !ok || b.BootOnce() != "b" || string(b.Get(2)) != "menu" {
		t.Fatalf("after setting: ok %v, once %q, item 2 %q", ok, b.BootOnce(), b.Get(2))
	}
	// The item bytes as syslinux lays them out: tag, length, data.
	if got := a[8:15]; string(got) != "\x02\x04menu\x01" || a[15] != 1 || a[16] != 'b' {
		t.Errorf("items % x", a[8:20])
	}

	// A torn write (power cut) leaves one copy to read.
	torn := a
	torn[100] ^= 0xff
	if c, ok, _ := ParseADV(torn[:]); !ok || c.BootOnce() != "b" {
		t.Errorf("first copy torn: ok %v, once %q; want the second copy's b", ok, c.BootOnce())
	}
	torn[advSize+100] ^= 0xff
	if c, ok, _ := ParseADV(torn[:]); ok || c.BootOnce() != "" || !advValid(c[:advSize]) {
		t.Errorf("both copies torn: ok %v, once %q; want an empty valid vector, as syslinux resets it", ok, c.BootOnce())
	}

	if err := a.SetBootOnce(""); err != nil || a.BootOnce() != "" || string(a.Get(2)) != "menu" {
		t.Errorf("cleared: once %q, item 2 %q, %v", a.BootOnce(), a.Get(2), err)
	}
	if err := a.SetBootOnce(string(make([]byte, 256))); err == nil {
		t.Error("an item of 256 bytes was taken")
	}
	if _, _, err := ParseADV(make([]byte, 512)); err == nil {
		t.Error("a vector of 512 bytes was read")
	}
}

func TestSlots(t *testing.T) {
	for _, c := range []struct {
		cmdline string
		want    Slot
	}{
		{"console=ttyS0 root=PARTUUID=cafe0001-02 ro", SlotA},
		{"root=PARTUUID=cafe0001-03", SlotB},
	} {
		if s, err := runningSlot(c.cmdline); err != nil || s != c.want || s.Other() == s {
			t.Errorf("RunningSlot(%q) = %q, %v; want %q", c.cmdline, s, err, c.want)
		}
	}
	for _, bad := range []string{"root=/dev/sda2", "root=PARTUUID=cafe0001-04", ""} {
		if s, err := runningSlot(bad); err == nil {
			t.Errorf("RunningSlot(%q) = %q, want an error", bad, s)
		}
	}
	for _, s := range []Slot{SlotA, SlotB} {
		if got, err := defaultIn(SyslinuxDefault(s), "DEFAULT ", ""); err != nil || got != s {
			t.Errorf("slot.cfg of %s reads %q, %v", s, got, err)
		}
		if got, err := defaultIn(LoaderConf(s), "default ", ".conf"); err != nil || got != s {
			t.Errorf("loader.conf of %s reads %q, %v", s, got, err)
		}
	}
	// Same length for either slot: they are rewritten in place.
	if len(SyslinuxDefault(SlotA)) != len(SyslinuxDefault(SlotB)) || len(LoaderConf(SlotA)) != len(LoaderConf(SlotB)) {
		t.Error("the default files differ in length between the slots")
	}
	if _, err := defaultIn([]byte("DEFAULT c\n"), "DEFAULT ", ""); err == nil {
		t.Error("slot c was read")
	}
	if s := efiString("ncpos-b.conf"); parseEFIString(s) != "ncpos-b.conf" || len(s) != 2*13 {
		t.Errorf("EFI string % x", s)
	}
}
