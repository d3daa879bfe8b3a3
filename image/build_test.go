package image

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/passwd"
)

// requireTools skips where the Debian tools are missing, unless
// NCPOS_REQUIRE_TOOLS=1 (CI installs them and must not skip).
func requireTools(t *testing.T) {
	t.Helper()
	testenv.Need(t, testenv.Tools, CheckTools())
}

func TestBuildLayout(t *testing.T) {
	requireTools(t)
	if testing.Short() {
		t.Skip("builds Go programs and file systems")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "ncpos.img")
	kernel := []byte("not really a kernel, but the builder only copies it")
	res, err := Build(context.Background(), Options{
		Config:          config.Default(),
		ConfigTOML:      config.DefaultTOML(),
		Kernel:          kernel,
		Size:            512e6,
		Output:          out,
		BuildID:         "test-1",
		ControlPassword: "the-test-box-password",
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != res.Size || res.Size > 1000944*512 {
		t.Fatalf("image is %d bytes (result says %d), want ≤ a 512 MB CF card", st.Size(), res.Size)
	}
	if res.BytesUsed >= res.Size/2 {
		t.Errorf("image allocates %d of %d bytes; want it sparse", res.BytesUsed, res.Size)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("output folder holds %d entries, want only the image", len(ents))
	}

	// Partition table as sfdisk reads it.
	js, err := exec.Command("sfdisk", "-J", out).Output()
	if err != nil {
		t.Fatal(err)
	}
	var pt struct {
		PartitionTable struct {
			Label      string
			ID         string
			Partitions []struct {
				Start, Size int64
				Type        string
				Bootable    bool
			}
		} `json:"partitiontable"`
	}
	if err := json.Unmarshal(js, &pt); err != nil {
		t.Fatal(err)
	}
	l, _ := NewLayout(512e6)
	if pt.PartitionTable.Label != "dos" || len(pt.PartitionTable.Partitions) != 4 {
		t.Fatalf("partition table = %s", js)
	}
	for i, p := range pt.PartitionTable.Partitions {
		n := i + 1
		if p.Start*512 != l.Parts[n].Offset || p.Size*512 != l.Parts[n].Size {
			t.Errorf("partition %d at %d+%d sectors, want %d+%d", n, p.Start, p.Size, l.Parts[n].Offset/512, l.Parts[n].Size/512)
		}
		if (n == partition.Boot) != p.Bootable {
			t.Errorf("partition %d bootable = %v", n, p.Bootable)
		}
	}
	if !strings.Contains(res.Cmdline, "root=PARTUUID="+strings.TrimPrefix(pt.PartitionTable.ID, "0x")+"-02") {
		t.Errorf("cmdline %q does not name disk signature %s partition 2", res.Cmdline, pt.PartitionTable.ID)
	}

	// Extract the partitions and look inside.
	extract := func(n int, name string) string {
		p := filepath.Join(t.TempDir(), name)
		b := make([]byte, l.Parts[n].Size)
		f, _ := os.Open(out)
		defer f.Close()
		if _, err := f.ReadAt(b, l.Parts[n].Offset); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, b, 0o644)
		return p
	}
	boot := extract(partition.Boot, "boot.fat")
	listing, err := exec.Command("mdir", "-i", boot, "-a", "-b", "-/", "::/").CombinedOutput()
	if err != nil {
		t.Fatalf("mdir: %v\n%s", err, listing)
	}
	for _, want := range []string{"::/vmlinuz-a", "::/vmlinuz-b", "::/cmdline.txt", "::/syslinux.cfg", "::/slot.cfg", "::/ldlinux.sys", "::/EFI/BOOT/BOOTX64.EFI", "::/loader/loader.conf", "::/loader/entries/ncpos-a.conf", "::/loader/entries/ncpos-b.conf"} {
		if !strings.Contains(strings.ToLower(string(listing)), strings.ToLower(want)) {
			t.Errorf("boot partition lacks %s:\n%s", want, listing)
		}
	}
	cfgText, err := exec.Command("mtype", "-i", boot, "::/cmdline.txt").Output()
	if err != nil || string(cfgText) != res.Cmdline+"\n" {
		t.Errorf("cmdline.txt = %q (%v), want %s", cfgText, err, res.Cmdline)
	}
	// syslinux's installer leaves a valid, empty ADV at the end of
	// ldlinux.sys, where the box sets its boot-once label.
	ldlinux := filepath.Join(t.TempDir(), "ldlinux.sys")
	if out, err := exec.Command("mcopy", "-i", boot, "::/ldlinux.sys", ldlinux).CombinedOutput(); err != nil {
		t.Fatalf("mcopy ldlinux.sys: %v %s", err, out)
	}
	sys, _ := os.ReadFile(ldlinux)
	if adv, ok, err := bootpart.ParseADV(sys[len(sys)-len(bootpart.ADV{}):]); err != nil || !ok || adv.BootOnce() != "" {
		t.Errorf("syslinux's ADV: valid %v, boot-once %q, %v; want a valid one without boot-once", ok, adv.BootOnce(), err)
	}

	// gokrazy's FAT reader (its init reads cmdline.txt at boot) assumes
	// a single FAT.
	if bs, _ := os.ReadFile(boot); len(bs) < 512 || bs[16] != 1 {
		t.Errorf("boot FAT has %d FAT copies, want 1", bs[16])
	}

	root := extract(partition.RootA, "root.squashfs")
	files, err := exec.Command("unsquashfs", "-l", "-d", "", root).CombinedOutput()
	if err != nil {
		t.Fatalf("unsquashfs: %v\n%s", err, files)
	}
	for _, want := range []string{"/gokrazy/init", "/gokrazy/dhcp", "/user/statusd", "/user/watchdogd", "/etc/ncpos/ncpos.toml", "/etc/hostname", "/etc/resolv.conf", "/perm", "/dev"} {
		if !strings.Contains(string(files), want+"\n") {
			t.Errorf("root lacks %s", want)
		}
	}

	perm := extract(partition.Perm, "perm.ext4")
	typ, err := exec.Command("blkid", "-o", "value", "-s", "TYPE", perm).Output()
	if err != nil || strings.TrimSpace(string(typ)) != "ext4" {
		t.Errorf("perm partition type %q (%v), want ext4", typ, err)
	}

	// The control password is on /perm as a hash only; gokrazy has none.
	if strings.Contains(string(files), "gokr-pw.txt") {
		t.Error("root holds a gokrazy password")
	}
	hash, err := exec.Command("debugfs", "-R", "cat /"+passwd.File, perm).Output()
	if err != nil || !passwd.Matches([]byte(strings.TrimSpace(string(hash))), "the-test-box-password") {
		t.Errorf("/perm/%s = %q (%v), want the hash of the control password", passwd.File, hash, err)
	}
	stat, _ := exec.Command("debugfs", "-R", "stat /"+passwd.File, perm).Output()
	if !strings.Contains(string(stat), "Mode:  0600") {
		t.Errorf("/perm/%s is not mode 0600:\n%s", passwd.File, stat)
	}
	whole, _ := os.ReadFile(out)
	if bytes.Contains(whole, []byte("the-test-box-password")) {
		t.Error("the image holds the control password in the clear")
	}
}

func TestBuildRefusesTooSmall(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.img")
	_, err := Build(context.Background(), Options{Config: config.Default(), Kernel: []byte("k"), Size: 100e6, Output: out, ControlPassword: "a-good-password"})
	if err == nil || !strings.Contains(err.Error(), "too small") {
		t.Fatalf("built a 100 MB image: %v", err)
	}
	if _, err := Build(context.Background(), Options{Config: config.Default(), Kernel: []byte("k"), Size: 512e6, Output: out, ControlPassword: "weak"}); err == nil || !strings.Contains(err.Error(), "control password: the password has 4 characters") {
		t.Fatalf("built with a weak password: %v", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Fatal("a failed build left an output file")
	}
}

// TestTestPrograms: a production image has no test program and an init
// without the test-image tag; a test image's init has the tag, and a test
// program outside TestDir is refused.
func TestTestPrograms(t *testing.T) {
	cfg := config.Default()
	tagged := func(progs []Program) bool {
		for _, p := range progs {
			if p.Path == "/gokrazy/init" {
				return slices.Contains(p.Tags, testImageTag)
			}
		}
		t.Fatal("no init")
		return false
	}
	prod, err := programs(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prod {
		if strings.HasPrefix(p.Path, testDir) || len(p.Tags) > 0 {
			t.Errorf("production image has %+v", p)
		}
	}
	test, err := programs(Options{Config: cfg, TestPrograms: []Program{{Pkg: "example.com/x", Path: testDir + "/x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !tagged(test) || len(test) != len(prod)+1 {
		t.Errorf("test image programs %+v: want init tagged %s and one more program", test, testImageTag)
	}
	if tagged(prod) {
		t.Error("production init tagged")
	}
	if _, err := programs(Options{Config: cfg, TestPrograms: []Program{{Pkg: "example.com/x", Path: "/user/x"}}}); err == nil || !strings.Contains(err.Error(), "not in /user/test") {
		t.Errorf("test program outside %s: err %v", testDir, err)
	}
}
