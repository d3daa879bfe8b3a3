package image

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/signature"
)

// trustedKeysFile is /etc/ncpos/update-keys.
func trustedKeysFile(keys []ed25519.PublicKey) []byte {
	var b strings.Builder
	b.WriteString("# Keys this appliance takes updates from (ncpos build -sign-key).\n")
	for _, k := range keys {
		b.WriteString(signature.FormatKey(k) + "\n")
	}
	return []byte(b.String())
}

// squashfsPayload is a squashfs image as `ncpos update` sends it: as long
// as its superblock says, rounded up to 4 KiB with zeros.
func squashfsPayload(b []byte) ([]byte, error) {
	if len(b) < 96 || !bytes.Equal(b[:4], []byte("hsqs")) {
		return nil, fmt.Errorf("no squashfs")
	}
	used := int64(binary.LittleEndian.Uint64(b[40:48]))
	used = (used + 4095) / 4096 * 4096
	if used <= int64(len(b)) {
		return b[:used], nil
	}
	return append(b, make([]byte, used-int64(len(b)))...), nil
}

// buildManifest describes the build (m's ID, time and security version)
// with its root and kernel, signed with key when there is one.
func buildManifest(rootImg string, kernel []byte, m signature.Manifest, key ed25519.PrivateKey) ([]byte, error) {
	b, err := os.ReadFile(rootImg)
	if err != nil {
		return nil, err
	}
	root, err := squashfsPayload(b)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", rootImg, err)
	}
	m.Root, m.Kernel = signature.BlobOf(root), signature.BlobOf(kernel)
	if key == nil {
		return signature.Unsigned(m)
	}
	return signature.Sign(key, m)
}

// Manifest returns the build's signed manifest from the boot partition.
func (im *Image) Manifest(ctx context.Context) ([]byte, error) {
	dir, err := os.MkdirTemp("", "ncpos-manifest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, bootpart.ManifestFile)
	src := fmt.Sprintf("%s@@%d", im.Path, im.Parts[partition.Boot].Offset)
	if err := run(ctx, []string{"MTOOLS_SKIP_CHECK=1"}, "mcopy", "-i", src, "::/"+bootpart.ManifestFile, out); err != nil {
		return nil, fmt.Errorf("%s carries no build manifest (built by an older ncpos?): %w", im.Path, err)
	}
	return os.ReadFile(out)
}
