package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listed finds the loop device among the disks ListDisks reports.
func listed(t *testing.T, dev string) Disk {
	t.Helper()
	disks, err := ListDisks("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if d.Path == dev {
			return d
		}
	}
	t.Fatalf("%s not in ListDisks: %+v", dev, disks)
	return Disk{}
}

// TestInstallLoopDevice writes a synthetic image onto a loop device, with
// the progress bar, and checks the device holds exactly the image.
func TestInstallLoopDevice(t *testing.T) {
	needRoot(t)
	img, l := makeImage(t, t.TempDir(), 40, 1)
	dev, backing := newLoop(t, 64)
	if d := listed(t, dev); !d.Eligible() || d.Transport != "loop" || d.Size != 64*testMiB || d.Model != "loop: "+backing {
		t.Fatalf("listed as %+v", d)
	}

	var out bytes.Buffer
	res, err := Install(context.Background(), Options{Image: img, Target: dev, Yes: true, Out: &out, ProgressBar: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("output:\n%s", out.String())
	t.Logf("result:\n%s", res)
	if res.Written != l.size || res.Verified != l.size || res.KeptPerm {
		t.Errorf("wrote %d, verified %d, kept perm %v; want %d, %d, false", res.Written, res.Verified, res.KeptPerm, l.size, l.size)
	}
	if sumRange(t, dev, 0, l.size) != sumRange(t, img, 0, l.size) {
		t.Fatalf("%s does not hold the image", dev)
	}
	for _, want := range []string{"target  " + dev + ": loop: " + backing + ", 67 MB, loop", "writing " + dev, "verifying " + dev, "MB/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestRefuseMounted: a device with a mounted file system is refused by the
// checks, and, should the checks miss it, by the kernel's O_EXCL.
func TestRefuseMounted(t *testing.T) {
	needRoot(t, "mount", "umount")
	img, _ := makeImage(t, t.TempDir(), 40, 1)
	dev, _ := newLoop(t, 64)
	mnt := mountExt4(t, dev)
	os.WriteFile(filepath.Join(mnt, "data"), []byte("keep"), 0o644)

	_, err := Install(context.Background(), Options{Image: img, Target: dev, Yes: true})
	var re *RefusedError
	want := fmt.Sprintf("refusing to write %s: disk %s is mounted on %s", dev, filepath.Base(dev), mnt)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	if d := listed(t, dev); d.Eligible() {
		t.Errorf("mounted %s listed as eligible", dev)
	}

	// Bypass the checks: the exclusive open must still fail.
	var st unix.Stat_t
	unix.Stat(dev, &st)
	f, err := openTarget(&Target{Path: dev, Rdev: st.Rdev, Disk: &Disk{}}, 0)
	if err == nil {
		f.Close()
		t.Fatalf("O_EXCL open of mounted %s succeeded", dev)
	}
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "exclusive access") {
		t.Fatalf("O_EXCL: got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(mnt, "data")); string(b) != "keep" {
		t.Fatalf("mounted file system changed")
	}
}

// TestRefuseSwap: a device in use as swap (/proc/swaps) is refused.
func TestRefuseSwap(t *testing.T) {
	needRoot(t, "mkswap", "swapon", "swapoff")
	img, _ := makeImage(t, t.TempDir(), 40, 1)
	dev, _ := newLoop(t, 64)
	run(t, "mkswap", dev)
	if out, err := exec.Command("swapon", "-p", "0", dev).CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("swapon %s: %v %s", dev, err, out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("swapoff", dev).CombinedOutput(); err != nil {
			t.Errorf("swapoff %s: %v\n%s", dev, err, out)
		}
	})
	_, err := Install(context.Background(), Options{Image: img, Target: dev, Yes: true})
	want := fmt.Sprintf("refusing to write %s: disk %s is in use as swap", dev, filepath.Base(dev))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// TestRefuseTooSmall: a device smaller than the image is refused untouched.
func TestRefuseTooSmall(t *testing.T) {
	needRoot(t)
	img, _ := makeImage(t, t.TempDir(), 40, 1)
	dev, backing := newLoop(t, 32)
	_, err := Install(context.Background(), Options{Image: img, Target: dev, Yes: true})
	want := fmt.Sprintf("refusing to write %s: it holds 33 MB (33554432 bytes), less than the image's 41 MB (41943040 bytes)", dev)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	if !allZero(t, backing) {
		t.Fatalf("refused device was written")
	}
}

func allZero(t *testing.T, path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{0}) == len(b)
}

// TestRefuseSystemDisk: the disk holding "/" is refused before anything
// else happens, through a device node of its own (made in a temporary
// directory if /dev lacks it). The Confirm function would fail the test,
// and O_EXCL on a mounted root would fail too: three layers.
func TestRefuseSystemDisk(t *testing.T) {
	needRoot(t)
	img, _ := makeImage(t, t.TempDir(), 40, 1)
	sys := newHost("/").systemDisks()
	if len(sys) == 0 {
		skipOrFail(t, "cannot tell which disk / is on")
	}
	for name := range sys {
		node := "/dev/" + name
		if fi, err := os.Stat(node); err != nil || fi.Mode()&os.ModeDevice == 0 {
			devnum, err := os.ReadFile("/sys/block/" + name + "/dev")
			if err != nil {
				t.Fatal(err)
			}
			var maj, min uint32
			fmt.Sscanf(string(devnum), "%d:%d", &maj, &min)
			node = filepath.Join(t.TempDir(), name)
			if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(unix.Mkdev(maj, min))); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Install(context.Background(), Options{Image: img, Target: node,
			Confirm: func(context.Context, string) (bool, error) {
				t.Errorf("asked to confirm writing the system disk %s", node)
				return false, nil
			}})
		want := fmt.Sprintf("refusing to write %s: it holds the running system (/ is on %s)", node, name)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
		t.Logf("%v", err)
	}
}

// TestInterruptedWrite cancels the context half-way through the copy: the
// error says the device is not bootable, the partition table (written last)
// is not there yet, and a second run completes the install.
func TestInterruptedWrite(t *testing.T) {
	needRoot(t)
	img, l := makeImage(t, t.TempDir(), 40, 1)
	dev, _ := newLoop(t, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Install(ctx, Options{Image: img, Target: dev, Yes: true, Progress: func(phase string, done, total int64) {
		if phase == "writing" && done >= total/2 {
			cancel()
		}
	}})
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, errNotBootable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want a WriteError wrapping ErrNotBootable and context.Canceled", err)
	}
	t.Logf("%v", err)
	for _, want := range []string{
		fmt.Sprintf("writing %s was interrupted after 20 MiB of 40 MiB", dev),
		dev + " is NOT bootable now",
		"Run ncpos install onto it again",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	if _, ok, _ := readMBR(mustOpen(t, dev)); ok {
		t.Errorf("interrupted write left a partition table")
	}

	res, err := Install(context.Background(), Options{Image: img, Target: dev, Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified != l.size || sumRange(t, dev, 0, l.size) != sumRange(t, img, 0, l.size) {
		t.Fatalf("second run did not complete the install")
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestKeepPerm: a reinstall with the same /perm place keeps the marker file
// in /perm (and an interrupted reinstall does not touch it either); an image
// with /perm elsewhere is refused; -wipe-perm erases it.
func TestKeepPerm(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	img1, l := makeImage(t, dir, 40, 1)
	img2, _ := makeImage(t, dir, 40, 2)
	img3, l3 := makeImage(t, dir, 48, 3) // /perm 8 MiB larger
	dev, _ := newLoop(t, 64)
	install := func(img string, wipe bool) (*Result, error) {
		var out bytes.Buffer
		res, err := Install(context.Background(), Options{Image: img, Target: dev, Yes: true, WipePerm: wipe, Out: &out})
		t.Logf("install %s (wipe-perm %v):\n%s", filepath.Base(img), wipe, out.String())
		return res, err
	}

	if res, err := install(img1, false); err != nil || res.KeptPerm {
		t.Fatalf("first install: %v %+v", err, res)
	}
	permWrite(t, dev, l.permOff, "/config-marker", "edge-1 settings")

	start := time.Now()
	res, err := install(img2, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reinstall keeping /perm: %v\n%s", time.Since(start), res)
	if !res.KeptPerm || res.Written != l.size-l.permLen || !strings.Contains(res.PermNote, `keeping its /perm (partition 4 at 21 MiB, 19 MiB, ext4 label "perm")`) {
		t.Errorf("kept %v, wrote %d (want %d), note %q", res.KeptPerm, res.Written, l.size-l.permLen, res.PermNote)
	}
	if got, ok := permRead(t, dev, l.permOff, "/config-marker"); !ok || got != "edge-1 settings" {
		t.Fatalf("marker after reinstall: %q %v", got, ok)
	}
	if sumRange(t, dev, 0, l.permOff) != sumRange(t, img2, 0, l.permOff) {
		t.Fatalf("boot and roots are not the new image's")
	}

	// Interrupted reinstall: /perm untouched, and it says so.
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Install(ctx, Options{Image: img1, Target: dev, Yes: true, Progress: func(phase string, done, total int64) {
		if done >= total/2 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, errNotBootable) || !strings.Contains(err.Error(), "its /perm was not touched and will be kept") {
		t.Fatalf("interrupted reinstall: %v", err)
	}
	if got, ok := permRead(t, dev, l.permOff, "/config-marker"); !ok || got != "edge-1 settings" {
		t.Fatalf("marker after interrupted reinstall: %q %v", got, ok)
	}

	// /perm elsewhere: refused, untouched.
	_, err = install(img3, false)
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, errPermElsewhere) ||
		!strings.Contains(err.Error(), "ncpos build -size 40MiB") || !strings.Contains(err.Error(), "-wipe-perm") {
		t.Fatalf("image with /perm elsewhere: %v", err)
	}
	t.Logf("%v", err)
	if _, ok := permRead(t, dev, l.permOff, "/config-marker"); !ok {
		t.Fatalf("refused install lost the marker")
	}

	// An interrupted -wipe-perm before it reached /perm: the rerun must
	// not keep the /perm the user chose to erase (half overwritten, in
	// general), so the table was cleared first.
	ctx, cancel = context.WithCancel(context.Background())
	_, err = Install(ctx, Options{Image: img2, Target: dev, Yes: true, WipePerm: true,
		Progress: func(phase string, done, total int64) {
			if done >= 4*testMiB {
				cancel()
			}
		}})
	cancel()
	if !errors.Is(err, errNotBootable) || !strings.Contains(err.Error(), "what was on it before is partly overwritten") {
		t.Fatalf("interrupted -wipe-perm: %v", err)
	}
	if _, ok, _ := readMBR(mustOpen(t, dev)); ok {
		t.Errorf("interrupted -wipe-perm left a partition table")
	}
	if res, err := install(img2, false); err != nil || res.KeptPerm {
		t.Fatalf("rerun after interrupted -wipe-perm: %v, kept /perm %v", err, res != nil && res.KeptPerm)
	}
	if _, ok := permRead(t, dev, l.permOff, "/config-marker"); ok {
		t.Fatalf("marker survived an interrupted -wipe-perm and its rerun")
	}
	permWrite(t, dev, l.permOff, "/config-marker", "edge-1 settings")

	// -wipe-perm: everything written, marker gone.
	res, err = install(img2, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.KeptPerm || res.Written != l.size || !strings.HasPrefix(res.PermNote, "-wipe-perm: erasing its /perm") {
		t.Errorf("wipe: kept %v, wrote %d, note %q", res.KeptPerm, res.Written, res.PermNote)
	}
	if _, ok := permRead(t, dev, l.permOff, "/config-marker"); ok {
		t.Fatalf("marker survived -wipe-perm")
	}
	if sumRange(t, dev, 0, l.size) != sumRange(t, img2, 0, l.size) {
		t.Fatalf("device is not the image after -wipe-perm")
	}

	// And the differently laid out image with -wipe-perm.
	if res, err := install(img3, true); err != nil || res.Verified != l3.size {
		t.Fatalf("-wipe-perm onto other layout: %v", err)
	}
}

// TestCheckDeviceNodes runs Check on real block device nodes (made with
// mknod in a temporary directory) against the fake /sys tree: a partition
// is refused in favour of its disk, a disk under a mounted dm-crypt is
// refused, a free USB stick passes. Nothing is opened.
func TestCheckDeviceNodes(t *testing.T) {
	needRoot(t)
	f := newFakeTree(t)
	h := f.host(8, 2)
	dir := t.TempDir()
	node := func(name string, maj, min uint32) string {
		p := filepath.Join(dir, name)
		if err := unix.Mknod(p, unix.S_IFBLK|0o600, int(unix.Mkdev(maj, min))); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name     string
		maj, min uint32
		want     string
	}{
		{"sdb1", 8, 17, "it is partition sdb1 of disk sdb; install onto the whole disk /dev/sdb"},
		{"sdc", 8, 32, "sdc1 is in use by dm-0 (cryptdata); dm-0 (cryptdata), holding sdc1, is mounted on /data"},
		{"sda", 8, 0, "it holds the running system (/ is on sda)"},
		{"vda", 254, 0, "it holds 536 MB (536870912 bytes), less than the image's 1.0 GB"},
	} {
		p := node(c.name, c.maj, c.min)
		_, err := h.check(p, false, 1e9)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	tg, err := h.check(node("sdb", 8, 16), false, 512e6)
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.Describe(); got != "SanDisk Cruzer Blade, 4.0 GB, usb, removable" {
		t.Errorf("describe: %q", got)
	}
}
