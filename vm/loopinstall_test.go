package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/install"
	"github.com/ncpos/ncpos/internal/testenv"
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

	res, err := install.Install(context.Background(), install.Options{Image: img, Target: dev, Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("install onto %s: %d bytes written and %d verified in %v (write %v, verify %v)",
		dev, res.Written, res.Verified, res.Duration, res.WriteTime, res.VerifyTime)

	v, _ := boot(t, dev, false)
	checkBooted(t, v)
}
