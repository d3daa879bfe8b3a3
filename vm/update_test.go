package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/update"
	"github.com/ncpos/ncpos/web/api"
)

func updateClient(v *VM) *update.Client {
	return &update.Client{
		StatusURL: v.StatusURL(),
		Password:  testPassword,
		HTTP:      v.Client(5 * time.Minute),
	}
}

func openImage(t *testing.T, path string) *image.Image {
	t.Helper()
	im, err := image.OpenImage(path)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// updConfig is wdConfig on a box whose pages and API need the control
// password to be read too: updates work there as anywhere.
var updConfig = append(slices.Clip(wdConfig), []byte("\n[status]\nauth_read = true\n")...)

// TestUpdateAToB updates under both firmwares: legacy BIOS boots through
// syslinux (its boot-once in the ADV), UEFI through systemd-boot
// (LoaderEntryOneShot); the final reboot shows each followed the switch
// to the new slot.
func TestUpdateAToB(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	for _, fw := range []struct {
		name string
		uefi bool
	}{{"bios", false}, {"uefi", true}} {
		t.Run(fw.name, func(t *testing.T) {
			t.Parallel()
			testUpdateAToB(t, fw.uefi)
		})
	}
}

func testUpdateAToB(t *testing.T, uefi bool) {
	a := testImage(t, "upd-a", updConfig)
	b := testImage(t, "upd-b", updConfig)
	v, _ := boot(t, a, uefi)
	before := system(t, v)
	old := bootPartition(t, v)

	// a and b share their kernel, so under SeaBIOS the boot partition
	// is left as it is; under UEFI b brings a kernel file of its own (the
	// same code, its padding marked), which the box writes to slot b.
	if uefi {
		b = withKernel(t, b, filepath.Join(t.TempDir(), "upd-b-kernel.img"), 1)
	}
	newKernel, err := openImage(t, b).Kernel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The operator's own control password, set from the API: the update
	// goes through with it, and the new build keeps it (it is on /perm),
	// which setting the image's back through it shows.
	const custom = "an operator's own password"
	setPassword(t, v, testPassword, custom)
	c := updateClient(v)
	c.Password = custom
	res, err := update.Run(context.Background(), c, openImage(t, b), update.Options{
		Timeout: v.Within(4 * time.Minute), Settle: 15 * time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	setPassword(t, v, custom, testPassword)
	// The update started right after the box's boot: it waited for seg1
	// to come up and held the new build to forwarding, not to the
	// link_down of a box still starting.
	if !res.Before["seg1"].Forwarding {
		t.Errorf("the update held the new build to seg1 %s, want forwarding", res.Before["seg1"])
	}
	if res.BootKept == uefi {
		t.Errorf("boot partition kept %v, want %v", res.BootKept, !uefi)
	}
	// Slot b runs its own kernel from now on; slot a keeps the old one
	// to return to.
	bp := bootPartition(t, v)
	if s := bp.Slots; s.Running != "b" || s.Default != "b" || s.Once != "" || s.Syslinux != "b" || s.Loader != "b" {
		t.Errorf("slots after the update: %+v, want b running and booted by both loaders", s)
	}
	if bp.Files["vmlinuz-b"] != signature.BlobOf(newKernel).SHA256 || bp.Files["vmlinuz-a"] != old.Files["vmlinuz-a"] {
		t.Errorf("kernels after the update: a %s (was %s), b %s; want b the new build's %s", bp.Files["vmlinuz-a"], old.Files["vmlinuz-a"], bp.Files["vmlinuz-b"], signature.BlobOf(newKernel).SHA256)
	}
	// The update's bypass overrides are gone, and reading still needs
	// the password (status.auth_read).
	noOverride(t, v, "after the update")
	if resp, err := v.Client(30 * time.Second).Get(v.StatusURL() + "api/v1/system"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("reading without the password after the update: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	t.Logf("OTA update %s -> %s took %v", res.From, res.To, res.Duration.Round(100*time.Millisecond))
	after := system(t, v)
	if !res.Permanent || after.BuildID != res.To || res.From != before.BuildID {
		t.Fatalf("after the update: %+v, running %s", res, after.BuildID)
	}
	if after.MachineID == "" || after.MachineID != before.MachineID {
		t.Fatalf("machine id %q -> %q: /perm was not kept", before.MachineID, after.MachineID)
	}

	// Permanent: B also comes up after a plain reboot.
	rebooted := time.Now()
	if err := updateClient(v).Reboot(context.Background(), "vm test: plain reboot"); err != nil {
		t.Fatal(err)
	}
	s, _ := waitReboot(t, v, rebooted, 3*time.Minute)
	if s.BuildID != res.To || !strings.Contains(s.Cmdline, "-03 ") {
		t.Fatalf("after a reboot: build %s, cmdline %q; want %s from partition 3", s.BuildID, s.Cmdline, res.To)
	}
	if s.MachineID != before.MachineID {
		t.Fatalf("machine id changed across the reboot")
	}
}

func TestUpdateFallsBack(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	a := testImage(t, "upd-a", updConfig)
	bad := testImage(t, "upd-sick", updConfig, image.Program{Pkg: "github.com/ncpos/ncpos/vm/hangself", Path: "/user/test/hangself"})
	v, _ := boot(t, a, false)
	before := system(t, v)

	res, err := update.Run(context.Background(), updateClient(v), openImage(t, bad), update.Options{
		Timeout: v.Within(4 * time.Minute), Settle: 15 * time.Second, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "returned to build "+before.BuildID) {
		t.Fatalf("update to a sick build: %v, want a fallback to %s", err, before.BuildID)
	}
	t.Logf("fallback took %v: %v", res.Duration.Round(100*time.Millisecond), err)
	after := system(t, v)
	if after.BuildID != before.BuildID || after.MachineID != before.MachineID {
		t.Fatalf("after the fallback: build %s machine %s; want %s %s", after.BuildID, after.MachineID, before.BuildID, before.MachineID)
	}
	if s := bootPartition(t, v).Slots; s.Running != "a" || s.Default != "a" || s.Once != "" {
		t.Errorf("slots after the fallback: %+v, want a running and the default, no boot-once left", s)
	}
	noOverride(t, v, "after the fallback")
}

// noOverride checks that seg1's relay has no override: the update's are
// gone, whatever its outcome.
func noOverride(t *testing.T, v *VM, when string) {
	t.Helper()
	if g := segmentOf(snapshot(t, v), "seg1"); g == nil || g.Bypass == nil || g.Bypass.Override != nil {
		t.Errorf("seg1 %s: %+v, want its relay without an override", when, g)
	}
}

// setPassword changes the box's control password from old to new
// through the API.
func setPassword(t *testing.T, v *VM, old, new string) {
	t.Helper()
	body, _ := json.Marshal(api.PasswordRequest{NewPassword: new})
	req, err := http.NewRequest("POST", v.StatusURL()+"api/v1/control/password", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("ncpos", old)
	resp, err := v.Client(time.Minute).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("changing the control password: %s: %s", resp.Status, msg)
	}
}

// bootPartition reads the box's boot partition through the API.
func bootPartition(t *testing.T, v *VM) *update.BootPartition {
	t.Helper()
	bp, err := updateClient(v).BootPartition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if bp.Slots == nil {
		t.Fatalf("the box reports no boot slots: %+v", bp)
	}
	return bp
}

// withKernel copies the image src to dst with mark as the last byte of
// both slots' kernel file, signed again: a build with another kernel file
// (the loaders load the whole file, the kernel ignores the padding).
func withKernel(t *testing.T, src, dst string, mark byte) string {
	t.Helper()
	k, err := openImage(t, src).Kernel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	k[len(k)-1] = mark
	withManifest(t, src, dst, func(s *signature.Signed, m signature.Manifest) {
		m.Kernel = signature.BlobOf(k)
		resign(t, s, m)
	})
	f := filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(f, k, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, slot := range []string{"vmlinuz-a", "vmlinuz-b"} {
		copyToBoot(t, dst, f, slot)
	}
	return dst
}
