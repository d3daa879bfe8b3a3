package image

import (
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
	"github.com/ncpos/ncpos/image/partition"
	"github.com/ncpos/ncpos/update/signature"
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
	k, err := im.Kernel(context.Background())
	if err != nil || string(k) != string(kernel) {
		t.Fatalf("kernel = %q, %v", k, err)
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
	c, err := execOutput("mtype", "-i", p, "::/cmdline.txt")
	if err != nil || !strings.Contains(c, "root=PARTUUID=12345678-03") {
		t.Fatalf("boot cmdline.txt = %q, %v", c, err)
	}
	// The boot files, as an update compares them with the box's.
	hashes, err := BootHashes(context.Background(), boot)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"vmlinuz", "cmdline.txt", "syslinux.cfg", "ldlinux.c32", "loader/loader.conf", "loader/entries/gokrazy.conf", "efi/boot/bootx64.efi"} {
		if hashes[f] == "" {
			t.Errorf("boot files %v lack %s", hashes, f)
		}
	}
	if hashes["vmlinuz"] != signature.BlobOf(kernel).SHA256 || hashes["ldlinux.sys"] != "" {
		t.Errorf("boot files %v: vmlinuz not the kernel, or ldlinux.sys compared", hashes)
	}
	bootA, err := BuildBoot(context.Background(), kernel, 0x12345678, partition.RootA)
	if err != nil {
		t.Fatal(err)
	}
	oh, err := BootHashes(context.Background(), bootA)
	if err != nil {
		t.Fatal(err)
	}
	if d := bootpart.Differences(hashes, oh); len(d) != 2 || d[0] != "cmdline.txt" || d[1] != "loader/entries/gokrazy.conf" {
		t.Errorf("boot partitions for root 3 and root 2 differ in %v, want cmdline.txt and the loader entry", d)
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
