package vm

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/install"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/passwd"
)

// TestInstalledLoopDeviceBoots writes the default image onto a loop device
// the way `ncpos install` writes a USB stick or CF card, then boots QEMU
// from that loop device.
func TestInstalledLoopDeviceBoots(t *testing.T) {
	requireQEMU(t)
	testenv.NeedRoot(t, testenv.QEMU, "losetup")
	t.Parallel()
	img := testImage(t, "default", nil)
	backing := filepath.Join(t.TempDir(), "cf.img")
	if err := os.WriteFile(backing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, 512e6); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", backing).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v\n%s", dev, err, out)
		}
	})

	// The card gets a /perm of its own, with a control password of its
	// own, as ncpos install gives it.
	boxPassword := "loop-card-password-1"
	hash, err := passwd.Hash(boxPassword)
	if err != nil {
		t.Fatal(err)
	}
	perm := func(size int64) (io.ReaderAt, error) {
		p, err := image.FreshPerm(context.Background(), t.TempDir(), size, hash)
		if err != nil {
			return nil, err
		}
		return os.Open(p)
	}
	res, err := install.Install(context.Background(), install.Options{Image: img, Target: dev, Yes: true, Perm: perm})
	if err != nil {
		t.Fatal(err)
	}
	if !res.FreshPerm {
		t.Fatal("the card did not get a /perm of its own")
	}
	t.Logf("install onto %s: %d bytes written and %d verified in %v (write %v, verify %v)",
		dev, res.Written, res.Verified, res.Duration, res.WriteTime, res.VerifyTime)

	v, _ := boot(t, dev, false)
	v.Password = boxPassword // reading needs it too
	checkBooted(t, v)
	if code := controlStatus(t, v, boxPassword); code != 200 {
		t.Errorf("control with the card's password = %d, want 200", code)
	}
	if code := controlStatus(t, v, testPassword); code != 401 {
		t.Errorf("control with the image's password = %d, want 401", code)
	}
}
