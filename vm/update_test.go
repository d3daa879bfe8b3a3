package vm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/update"
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

// TestUpdateAToB updates under both firmwares: legacy BIOS boots through
// syslinux (cmdline.txt), UEFI through systemd-boot (its entry); the final
// reboot shows each followed the switch to the new root.
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
	a := testImage(t, "upd-a", wdConfig)
	b := testImage(t, "upd-b", wdConfig)
	v, _ := boot(t, a, uefi)
	before := system(t, v)

	// Under UEFI the boot partition is written anyway, so that both
	// ways are tested: a and b share kernel, loaders and entries, so
	// under SeaBIOS it is left as it is.
	res, err := update.Run(context.Background(), updateClient(v), openImage(t, b), update.Options{
		Timeout: 4 * time.Minute, Settle: 15 * time.Second, RewriteBoot: uefi, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if res.BootKept == uefi {
		t.Errorf("boot partition kept %v, want %v", res.BootKept, !uefi)
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
	a := testImage(t, "upd-a", wdConfig)
	bad := testImage(t, "upd-sick", wdConfig, image.Program{Pkg: "github.com/ncpos/ncpos/vm/hangself", Path: "/user/test/hangself"})
	v, _ := boot(t, a, false)
	before := system(t, v)

	res, err := update.Run(context.Background(), updateClient(v), openImage(t, bad), update.Options{
		Timeout: 4 * time.Minute, Settle: 15 * time.Second, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "returned to build "+before.BuildID) {
		t.Fatalf("update to a sick build: %v, want a fallback to %s", err, before.BuildID)
	}
	t.Logf("fallback took %v: %v", res.Duration.Round(100*time.Millisecond), err)
	after := system(t, v)
	if after.BuildID != before.BuildID || after.MachineID != before.MachineID {
		t.Fatalf("after the fallback: build %s machine %s; want %s %s", after.BuildID, after.MachineID, before.BuildID, before.MachineID)
	}
}
