package image

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/signature"
)

func TestOpenImageRoundTrip(t *testing.T) {
	requireTools(t)
	if testing.Short() {
		t.Skip("builds an image")
	}
	out := filepath.Join(t.TempDir(), "ncpos.img")
	kernel := []byte("kernel bytes for the round trip")
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	res, err := Build(context.Background(), Options{
		Config: config.Default(), ConfigTOML: config.DefaultTOML(), Kernel: kernel,
		Size: 512e6, Output: out, BuildID: "read-1", ControlPassword: "read-test-password",
		SigningKey: key, TrustedKeys: []ed25519.PublicKey{other},
		QuickRoot: true, // TestBuildLayout packs the root as a release does
	})
	if err != nil {
		t.Fatal(err)
	}
	im, err := OpenImage(out)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := NewLayout(512e6)
	if im.DiskSig != res.DiskSig || im.Parts != l.Parts {
		t.Fatalf("read back sig %08x parts %v, want %08x %v", im.DiskSig, im.Parts, res.DiskSig, l.Parts)
	}
	root, err := im.RootSquashfs()
	if err != nil {
		t.Fatal(err)
	}
	if len(root) < int(res.RootBytes) || len(root) > int(res.RootBytes)+4096 {
		t.Fatalf("root squashfs %d bytes, want about %d", len(root), res.RootBytes)
	}
	// The kernel file of either slot: the kernel, padded to one size.
	k, err := im.Kernel(context.Background())
	if err != nil || len(k) != bootpart.KernelFileSize || string(bytes.TrimRight(k, "\x00")) != string(kernel) {
		t.Fatalf("kernel = %d bytes %q…, %v", len(k), k[:min(len(k), 40)], err)
	}
	// The manifest on the boot partition is signed by the build's key
	// and names exactly the root and kernel an update sends.
	signed, err := im.Manifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, err := signature.Verify(signed, []ed25519.PublicKey{pub})
	if err != nil {
		t.Fatalf("the build's manifest: %v", err)
	}
	if err := m.Root.Check("root", root); err != nil {
		t.Error(err)
	}
	if err := m.Kernel.Check("kernel", k); err != nil {
		t.Error(err)
	}
	if m.BuildID != "read-1" || !m.Built.Equal(res.Built) || !res.Signed {
		t.Errorf("manifest %+v, build %+v", m, res)
	}
	// The root trusts the signing key and the key given besides, and
	// knows its build time.
	for file, want := range map[string]string{
		"etc/ncpos/update-keys": signature.FormatKey(pub) + "\n" + signature.FormatKey(other) + "\n",
		"etc/ncpos/built":       res.Built.Format(time.RFC3339) + "\n",
	} {
		got, err := execOutput("unsquashfs", "-o", strconv.FormatInt(im.Parts[partition.RootA].Offset, 10), "-cat", out, file)
		if err != nil || !strings.HasSuffix(got, want) {
			t.Errorf("%s = %q, %v; want it to end %q", file, got, err, want)
		}
	}

	boot, err := BuildBoot(context.Background(), kernel, 0x12345678, partition.RootB)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "boot.fat")
	os.WriteFile(p, boot, 0o644)
	// A kernel and an entry per slot, for both loaders; root 3 by default.
	for file, want := range map[string][]string{
		"syslinux.cfg":                {"INCLUDE /slot.cfg", "LABEL a\n  LINUX /vmlinuz-a\n  APPEND console=tty0 console=ttyS0,115200n8 root=PARTUUID=12345678-02 ", "LABEL b\n  LINUX /vmlinuz-b\n  APPEND console=tty0 console=ttyS0,115200n8 root=PARTUUID=12345678-03 "},
		"slot.cfg":                    {"DEFAULT b\n"},
		"loader/loader.conf":          {"default ncpos-b.conf\n"},
		"loader/entries/ncpos-a.conf": {"linux /vmlinuz-a\n", "root=PARTUUID=12345678-02 "},
		"loader/entries/ncpos-b.conf": {"linux /vmlinuz-b\n", "root=PARTUUID=12345678-03 "},
	} {
		c, err := execOutput("mtype", "-i", p, "::/"+file)
		for _, w := range want {
			if err != nil || !strings.Contains(c, w) {
				t.Errorf("boot %s = %q, %v; want it to hold %q", file, c, err, w)
			}
		}
	}
	// The boot files, as an update compares them with the box's.
	hashes, err := bootHashes(context.Background(), boot)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"vmlinuz-a", "vmlinuz-b", "cmdline.txt", "syslinux.cfg", "slot.cfg", "ldlinux.c32", "loader/loader.conf", "loader/entries/ncpos-a.conf", "loader/entries/ncpos-b.conf", "efi/boot/bootx64.efi"} {
		if hashes[f] == "" {
			t.Errorf("boot files %v lack %s", hashes, f)
		}
	}
	padded, _ := bootpart.PadKernel(kernel)
	if k := signature.BlobOf(padded).SHA256; hashes["vmlinuz-a"] != k || hashes["vmlinuz-b"] != k || hashes["ldlinux.sys"] != "" {
		t.Errorf("boot files %v: a slot's kernel not the kernel, or ldlinux.sys compared", hashes)
	}
	bootA, err := BuildBoot(context.Background(), kernel, 0x12345678, partition.RootA)
	if err != nil {
		t.Fatal(err)
	}
	oh, err := bootHashes(context.Background(), bootA)
	if err != nil {
		t.Fatal(err)
	}
	if d := bootpart.Differences(hashes, oh); len(d) != 2 || d[0] != "loader/loader.conf" || d[1] != "slot.cfg" {
		t.Errorf("boot partitions booting root 3 and root 2 differ in %v, want the two files naming the default slot", d)
	}

	notImage := filepath.Join(t.TempDir(), "x")
	os.WriteFile(notImage, make([]byte, 4096), 0o644)
	if _, err := OpenImage(notImage); err == nil || !strings.Contains(err.Error(), "not an ncpos image") {
		t.Fatalf("OpenImage of zeros: %v", err)
	}
}

func execOutput(name string, args ...string) (string, error) {
	out, err := execCommand(context.Background(), name, args...).CombinedOutput()
	return string(out), err
}
