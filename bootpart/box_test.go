package bootpart_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/signature"
)

// TestBox drives the files of a boot partition as the image builds it,
// as statusd does on the box: slots read, the inactive slot's kernel
// written, a boot-once set in syslinux's ADV, and the default switched in
// place. The files are copied out of the FAT (this host's kernel need
// not have vfat); the VM tests drive the box's own partition.
func TestBox(t *testing.T) {
	testenv.Need(t, testenv.Tools, image.CheckTools())
	fat, err := image.BuildBoot(context.Background(), []byte("old kernel"), 0x12345678, partition.RootA)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "boot.fat")
	if err := os.WriteFile(file, fat, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "boot")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mtools := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", args[0], err, out)
		}
	}
	mtools("mcopy", "-s", "-n", "-i", file, "::/*", dir)
	box := &bootpart.Box{Mnt: dir, Cmdline: "console=ttyS0 root=PARTUUID=12345678-02 ro"}
	read := func() *bootpart.State {
		t.Helper()
		s, err := box.Read()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := read(); *s != (bootpart.State{Firmware: "bios", Running: "a", Default: "a", Syslinux: "a", Loader: "a"}) || s.TestBoot() {
		t.Fatalf("a fresh boot partition: %+v", s)
	}
	if err := box.WriteKernel(bootpart.SlotA, []byte("x")); err == nil || !strings.Contains(err.Error(), "slot a runs") {
		t.Fatalf("writing the running slot's kernel: %v", err)
	}
	if err := box.WriteKernel(bootpart.SlotB, []byte("new")); err == nil || !strings.Contains(err.Error(), "only kernel files of its own size") {
		t.Fatalf("a kernel file of another size: %v", err)
	}
	newKernel, _ := bootpart.PadKernel([]byte("new"))
	if err := box.WriteKernel(bootpart.SlotB, newKernel); err != nil {
		t.Fatal(err)
	}
	for slot, want := range map[bootpart.Slot]string{"a": "old kernel", "b": "new"} {
		k, _ := bootpart.PadKernel([]byte(want))
		if h, err := box.KernelHash(slot); err != nil || h != signature.BlobOf(k).SHA256 {
			t.Errorf("slot %s's kernel %s, %v; want that of %q", slot, h, err, want)
		}
	}
	if err := box.BootOnce(bootpart.SlotB); err != nil {
		t.Fatal(err)
	}
	if s := read(); s.Once != "b" || s.Default != "a" {
		t.Fatalf("after the boot-once: %+v", s)
	}
	// syslinux reads the ADV at the end of ldlinux.sys, which keeps its
	// length.
	b, _ := os.ReadFile(filepath.Join(dir, "ldlinux.sys"))
	orig := filepath.Join(t.TempDir(), "orig.sys")
	mtools("mcopy", "-i", file, "::/ldlinux.sys", orig)
	if o, _ := os.ReadFile(orig); len(o) != len(b) || string(o[:len(o)-1024]) != string(b[:len(b)-1024]) {
		t.Errorf("ldlinux.sys changed beyond its ADV: %d bytes, was %d", len(b), len(o))
	}
	if adv, ok, err := bootpart.ParseADV(b[len(b)-len(bootpart.ADV{}):]); !ok || err != nil || adv.BootOnce() != "b" {
		t.Errorf("ldlinux.sys's ADV: valid %v, boot-once %q, %v", ok, adv.BootOnce(), err)
	}

	// The test boot runs slot b: the switch makes it the default.
	box.Cmdline = "root=PARTUUID=12345678-03"
	if s := read(); !s.TestBoot() || s.Running != "b" {
		t.Fatalf("test-booting: %+v", s)
	}
	if err := box.SetDefault(bootpart.SlotB); err != nil {
		t.Fatal(err)
	}
	if s := read(); *s != (bootpart.State{Firmware: "bios", Running: "b", Default: "b", Syslinux: "b", Loader: "b"}) {
		t.Fatalf("after the switch: %+v", s)
	}
	files, err := box.Hashes()
	if err != nil {
		t.Fatal(err)
	}
	if files["slot.cfg"] != signature.BlobOf(bootpart.SyslinuxDefault("b")).SHA256 || files["loader/loader.conf"] != signature.BlobOf(bootpart.LoaderConf("b")).SHA256 {
		t.Errorf("after the switch: %v", files)
	}
}
