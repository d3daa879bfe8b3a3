package install

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/internal/testenv"
)

// skipOrFail skips, unless NCPOS_REQUIRE_TOOLS=1 says the environment is
// supposed to have everything, in which case a missing piece is a failure.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	testenv.Need(t, testenv.Tools, errors.New(why))
}

// needTools checks for the Debian tools the test drives.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range append([]string{"sfdisk", "mke2fs", "debugfs"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, fmt.Sprintf("%s is not installed (apt-get install fdisk e2fsprogs mount)", tool))
		}
	}
}

// needRoot is for tests that use loop devices, mounts or device nodes.
func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "loop devices need root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		skipOrFail(t, "no /dev/loop-control (loop driver missing)")
	}
	needTools(t, append([]string{"losetup"}, tools...)...)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

const testMiB = 1 << 20

// testLayout is the partition layout of the synthetic test images: the
// shape of an ncpos image (active FAT16 boot, root A, root B, perm), in
// small sizes so a test writes tens of MiB, not 512 MB.
type testLayout struct{ bootOff, bootLen, rootLen, permOff, permLen, size int64 }

func newTestLayout(sizeMiB int64) testLayout {
	l := testLayout{bootOff: 1 * testMiB, bootLen: 4 * testMiB, rootLen: 8 * testMiB, size: sizeMiB * testMiB}
	l.permOff = l.bootOff + l.bootLen + 2*l.rootLen
	l.permLen = l.size - l.permOff
	return l
}

// makeImage writes a synthetic ncpos image: an sfdisk-written MBR, the boot
// and root partitions full of pseudo-random bytes from seed (so two images
// differ everywhere), and an ext4 labelled "perm" made by mke2fs in
// partition 4.
func makeImage(t *testing.T, dir string, sizeMiB, seed int64) (string, testLayout) {
	t.Helper()
	l := newTestLayout(sizeMiB)
	path := filepath.Join(dir, fmt.Sprintf("ncpos-%dM-%d.img", sizeMiB, seed))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(l.size); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewSource(seed))
	data := make([]byte, l.bootLen+2*l.rootLen)
	rnd.Read(data)
	if _, err := f.WriteAt(data, l.bootOff); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := func(n int64) int64 { return n / 512 }
	script := fmt.Sprintf("label: dos\nlabel-id: 0x%08x\nunit: sectors\n\n"+
		"start=%d, size=%d, type=e, bootable\nstart=%d, size=%d, type=83\nstart=%d, size=%d, type=83\nstart=%d, size=%d, type=83\n",
		0x1c0ffee0+seed,
		s(l.bootOff), s(l.bootLen), s(l.bootOff+l.bootLen), s(l.rootLen),
		s(l.bootOff+l.bootLen+l.rootLen), s(l.rootLen), s(l.permOff), s(l.permLen))
	cmd := exec.Command("sfdisk", "-q", "--no-reread", "--no-tell-kernel", path)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sfdisk: %v\n%s", err, out)
	}
	run(t, "mke2fs", "-q", "-F", "-t", "ext4", "-L", "perm", "-E", fmt.Sprintf("offset=%d", l.permOff),
		path, fmt.Sprintf("%dk", l.permLen/1024))
	return path, l
}

// newLoop attaches a loop device to a new sizeMiB file and detaches it in
// cleanup, whatever the test's outcome.
func newLoop(t *testing.T, sizeMiB int64) (dev, backing string) {
	t.Helper()
	backing = filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(backing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, sizeMiB*testMiB); err != nil {
		t.Fatal(err)
	}
	dev = run(t, "losetup", "-f", "--show", backing)
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v\n%s", dev, err, out)
		}
	})
	return dev, backing
}

// mountExt4 makes an ext4 on dev and mounts it in a temporary directory,
// unmounting it in cleanup (which runs before the loop device's detach).
func mountExt4(t *testing.T, dev string) string {
	t.Helper()
	run(t, "mke2fs", "-q", "-F", "-t", "ext4", dev)
	dir := t.TempDir()
	run(t, "mount", "-t", "ext4", dev, dir)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// permWrite puts a file into the ext4 at off on dev with debugfs.
func permWrite(t *testing.T, dev string, off int64, name, content string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "marker")
	if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "debugfs", "-w", "-R", fmt.Sprintf("write %s %s", src, name), fmt.Sprintf("%s?offset=%d", dev, off))
}

// permRead reads a file from the ext4 at off on dev; ok is false when the
// file is not there.
func permRead(t *testing.T, dev string, off int64, name string) (string, bool) {
	t.Helper()
	cmd := exec.Command("debugfs", "-R", "cat "+name, fmt.Sprintf("%s?offset=%d", dev, off))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("debugfs cat %s: %v\n%s", name, err, errb.String())
	}
	if strings.Contains(errb.String(), "File not found") {
		return "", false
	}
	return out.String(), true
}

// sumRange hashes n bytes at off of the file or device at path.
func sumRange(t *testing.T, path string, off, n int64) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, off, n)); err != nil {
		t.Fatal(err)
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}
