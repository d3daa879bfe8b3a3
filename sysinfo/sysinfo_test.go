package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func write(t *testing.T, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMounts(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/mounts", `/dev/root / squashfs ro,relatime 0 0
tmpfs /tmp tmpfs rw,nosuid 0 0
/dev/vda4 /perm ext4 rw,relatime 0 0
/dev/sdb1 /mnt/my\040stick vfat rw 0 0
`)
	ms, err := Mounts(root)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := FindMount(ms, "/")
	if !ok || r.FSType != "squashfs" || !r.ReadOnly() {
		t.Fatalf("root mount = %+v, want read-only squashfs", r)
	}
	p, ok := FindMount(ms, "/perm")
	if !ok || p.FSType != "ext4" || p.ReadOnly() {
		t.Fatalf("perm mount = %+v", p)
	}
	if _, ok := FindMount(ms, "/mnt/my stick"); !ok {
		t.Fatal("octal escape in mount point not decoded")
	}
}

func TestDiskWrites(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/diskstats", ` 253       0 vda 1226 0 98524 336 15 3 272 8 0 412 344 0 0 0 0 0 0
 253       2 vda2 900 0 80000 200 0 0 0 0 0 200 200 0 0 0 0 0 0
 253       4 vda4 100 0 800 20 15 3 272 8 0 30 28 0 0 0 0 0 0
`)
	// /sys/dev/block/253:2 -> ../../devices/pci/virtio1/block/vda/vda2
	dev := filepath.Join(root, "sys/devices/pci/virtio1/block/vda")
	write(t, root, "sys/devices/pci/virtio1/block/vda/vda2/partition", "2\n")
	os.MkdirAll(filepath.Join(root, "sys/dev/block"), 0o755)
	if err := os.Symlink(filepath.Join(dev, "vda2"), filepath.Join(root, "sys/dev/block/253:2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, filepath.Join(root, "sys/dev/block/253:0")); err != nil {
		t.Fatal(err)
	}
	for _, minor := range []uint32{0, 2} {
		disk, err := DiskOf(root, 253, minor)
		if err != nil {
			t.Fatal(err)
		}
		if disk != "vda" {
			t.Fatalf("DiskOf(253:%d) = %q, want vda", minor, disk)
		}
	}
	w, err := readDiskWrites(root, "vda")
	if err != nil {
		t.Fatal(err)
	}
	if w.Writes != 15 || w.BytesWritten != 272*512 {
		t.Fatalf("ReadDiskWrites = %+v, want 15 writes, %d bytes", w, 272*512)
	}
	if _, err := readDiskWrites(root, "sda"); err == nil {
		t.Fatal("ReadDiskWrites of a missing disk succeeded")
	}
}

func TestUptime(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/uptime", "123.45 200.00\n")
	up, err := Uptime(root)
	if err != nil {
		t.Fatal(err)
	}
	if up != 123450*time.Millisecond {
		t.Fatalf("Uptime = %v", up)
	}
}
