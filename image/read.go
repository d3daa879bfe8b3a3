package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/partition"
)

// Image is an ncpos image file read back: its disk signature and partition
// table, for `ncpos update`, which sends the parts of a new image to a
// running appliance.
type Image struct {
	Path    string
	DiskSig uint32
	Parts   [5]struct{ Offset, Size int64 } // index = partition number
}

// OpenImage reads the MBR of an ncpos image file.
func OpenImage(path string) (*Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mbr := make([]byte, 512)
	if _, err := io.ReadFull(f, mbr); err != nil {
		return nil, fmt.Errorf("%s: reading MBR: %w", path, err)
	}
	if mbr[510] != 0x55 || mbr[511] != 0xaa {
		return nil, fmt.Errorf("%s: no MBR partition table (not an ncpos image)", path)
	}
	im := &Image{Path: path, DiskSig: binary.LittleEndian.Uint32(mbr[440:444])}
	for n := 1; n <= 4; n++ {
		e := mbr[446+16*(n-1) : 446+16*n]
		im.Parts[n].Offset = int64(binary.LittleEndian.Uint32(e[8:12])) * sector
		im.Parts[n].Size = int64(binary.LittleEndian.Uint32(e[12:16])) * sector
		if im.Parts[n].Size == 0 {
			return nil, fmt.Errorf("%s: partition %d is empty (not an ncpos image)", path, n)
		}
	}
	return im, nil
}

// RootSquashfs returns the squashfs in root partition A, as long as the
// file system says it is (rounded up to 4 KiB), not the whole partition.
func (im *Image) RootSquashfs() ([]byte, error) {
	f, err := os.Open(im.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sb := make([]byte, 96)
	if _, err := f.ReadAt(sb, im.Parts[partition.RootA].Offset); err != nil {
		return nil, err
	}
	if !bytes.Equal(sb[:4], []byte("hsqs")) {
		return nil, fmt.Errorf("%s: partition %d holds no squashfs", im.Path, partition.RootA)
	}
	used := int64(binary.LittleEndian.Uint64(sb[40:48]))
	used = (used + 4095) / 4096 * 4096
	if used > im.Parts[partition.RootA].Size {
		return nil, fmt.Errorf("%s: squashfs claims %d bytes, more than its partition", im.Path, used)
	}
	b := make([]byte, used)
	if _, err := f.ReadAt(b, im.Parts[partition.RootA].Offset); err != nil {
		return nil, err
	}
	return b, nil
}

// Kernel returns the kernel on the boot partition.
func (im *Image) Kernel(ctx context.Context) ([]byte, error) {
	dir, err := os.MkdirTemp("", "ncpos-kernel-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "vmlinuz")
	src := fmt.Sprintf("%s@@%d", im.Path, im.Parts[partition.Boot].Offset)
	// A built image boots slot a; both slots hold its kernel.
	if err := run(ctx, []string{"MTOOLS_SKIP_CHECK=1"}, "mcopy", "-i", src, "::/"+bootpart.SlotA.Kernel(), out); err != nil {
		return nil, fmt.Errorf("reading the kernel from %s: %w", im.Path, err)
	}
	return os.ReadFile(out)
}

// BuildID reads the build ID from the image's root file system.
func (im *Image) BuildID() (string, error) {
	out, err := exec.Command("unsquashfs", "-o", strconv.FormatInt(im.Parts[partition.RootA].Offset, 10),
		"-cat", im.Path, "etc/ncpos/build-id").Output()
	if err != nil {
		return "", fmt.Errorf("reading the build ID from %s: %w", im.Path, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// BootHashes hashes the files of the boot partition this build would give
// an installed appliance with disk signature diskSig, booting root
// partition rootPart by default, with kernel (the build's, as Kernel
// reads it) in its slots: BuildBoot, then BootHashes.
func (im *Image) BootHashes(ctx context.Context, kernel []byte, diskSig uint32, rootPart int) (map[string]string, error) {
	boot, err := BuildBoot(ctx, kernel, diskSig, rootPart)
	if err != nil {
		return nil, err
	}
	return bootHashes(ctx, boot)
}

// BuildBoot makes the boot partition image this build would give an
// installed appliance: its disk signature, booting root partition
// rootPart by default, with kernel (padded) in both slots. `ncpos update` compares
// its loaders and entries with the box's.
func BuildBoot(ctx context.Context, kernel []byte, diskSig uint32, rootPart int) ([]byte, error) {
	def, err := bootpart.SlotOf(rootPart)
	if err != nil {
		return nil, err
	}
	if kernel, err = bootpart.PadKernel(kernel); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("mkfs.fat"); err != nil {
		return nil, CheckTools()
	}
	tmp, err := os.MkdirTemp("", "ncpos-boot-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "boot.fat")
	if err := makeBoot(ctx, tmp, out, defaultBootSize, BootFiles{
		Kernel: kernel, DiskSig: diskSig, Default: def, Label: "NCPOS-BOOT", VolumeID: diskSig,
	}); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// bootHashes hashes the files of a boot partition image as
// bootpart.HashTree does the box's own, leaving out ldlinux.sys: syslinux
// patches it with where it lies on each file system, so no two copies
// match, and ldlinux.c32 is compared in its stead.
func bootHashes(ctx context.Context, fat []byte) (map[string]string, error) {
	dir, err := os.MkdirTemp("", "ncpos-bootfiles-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "boot.fat")
	if err := os.WriteFile(img, fat, 0o600); err != nil {
		return nil, err
	}
	files := filepath.Join(dir, "files")
	if err := os.Mkdir(files, 0o700); err != nil {
		return nil, err
	}
	if err := run(ctx, []string{"MTOOLS_SKIP_CHECK=1"}, "mcopy", "-s", "-n", "-i", img, "::/*", files); err != nil {
		return nil, fmt.Errorf("reading the boot partition image: %w", err)
	}
	h, err := bootpart.HashTree(files)
	if err != nil {
		return nil, err
	}
	delete(h, "ldlinux.sys")
	return h, nil
}
