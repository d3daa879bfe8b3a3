// Package image builds the ncpos disk image without gokrazy's packer: a boot
// FAT partition (kernel, command line, syslinux for legacy BIOS and
// systemd-boot for UEFI), two squashfs roots for A/B updates and an ext4
// /perm, in an MBR partition table that gokrazy's rootdev understands
// (root=PARTUUID=<disk signature>-02).
//
// It drives the standard Debian tools (mksquashfs, mkfs.fat, mtools,
// syslinux, mke2fs, sfdisk) rather than hand-writing file systems.
package image

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/partition"
)

const (
	mib = 1 << 20
	// firstOffset leaves the first MiB for the MBR and alignment, as flash
	// erase blocks want.
	firstOffset = 1 * mib
	// defaultBootSize holds the kernel (~15 MB) twice over for updates.
	defaultBootSize = 64 * mib
	// defaultRootSize holds one root squashfs with room to grow.
	defaultRootSize = 128 * mib
	// minPermSize is the smallest /perm worth having (config, records).
	minPermSize = 16 * mib
)

// Layout is where each partition lives on the disk, in bytes.
type Layout struct {
	Size  int64
	Parts [5]struct{ Offset, Size int64 } // index = partition number
}

// NewLayout lays out a disk of size bytes: boot, root A, root B, and /perm
// taking what is left. Sizes are rounded down to whole MiB.
func NewLayout(size int64) (*Layout, error) {
	size = size / mib * mib
	l := &Layout{Size: size}
	off := int64(firstOffset)
	for _, p := range []struct {
		n    int
		size int64
	}{{partition.Boot, defaultBootSize}, {partition.RootA, defaultRootSize}, {partition.RootB, defaultRootSize}} {
		l.Parts[p.n].Offset, l.Parts[p.n].Size = off, p.size
		off += p.size
	}
	perm := size - off
	if perm < minPermSize {
		return nil, fmt.Errorf("disk size %d MiB is too small: boot, two roots and /perm need at least %d MiB",
			size/mib, (off+minPermSize)/mib)
	}
	l.Parts[partition.Perm].Offset, l.Parts[partition.Perm].Size = off, perm
	return l, nil
}

// ParseSize reads a card size as vendors print it: "512M", "1G", "4G" in
// decimal units (a "512 MB" CompactFlash card holds about 512,000,000
// bytes, not 512 MiB), or a plain byte count. "MiB"/"GiB" are binary.
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"MiB", 1 << 20}, {"GiB", 1 << 30}, {"MB", 1e6}, {"GB", 1e9}, {"M", 1e6}, {"G", 1e9}}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number with an optional unit M, G, MiB or GiB (e.g. 512M)", s)
	}
	return n * mult, nil
}
