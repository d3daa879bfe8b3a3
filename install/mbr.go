package install

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ncpos/ncpos/partition"
)

const sectorSize = 512

// mbrPart is one primary partition entry of an MBR.
type mbrPart struct {
	Active         bool
	Type           byte
	Start, Sectors uint32 // in 512-byte sectors
}

func (p mbrPart) Offset() int64 { return int64(p.Start) * sectorSize }
func (p mbrPart) Size() int64   { return int64(p.Sectors) * sectorSize }
func (p mbrPart) End() int64    { return p.Offset() + p.Size() }

// mbr is a parsed MBR partition table; Parts[0] is partition 1.
type mbr struct {
	DiskSig uint32
	Parts   [4]mbrPart
}

// readMBR reads the partition table in the first sector of r; ok is false
// when there is none (no 0x55AA signature, or a short read of an empty file).
func readMBR(r io.ReaderAt) (m *mbr, ok bool, err error) {
	b := make([]byte, sectorSize)
	if _, err := r.ReadAt(b, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if b[510] != 0x55 || b[511] != 0xAA {
		return nil, false, nil
	}
	m = &mbr{DiskSig: binary.LittleEndian.Uint32(b[440:])}
	for i := range m.Parts {
		e := b[446+16*i:]
		m.Parts[i] = mbrPart{
			Active:  e[0] == 0x80,
			Type:    e[4],
			Start:   binary.LittleEndian.Uint32(e[8:]),
			Sectors: binary.LittleEndian.Uint32(e[12:]),
		}
	}
	return m, true, nil
}

// ncposLayout says whether the table has the shape image.Build gives every
// ncpos disk: an active FAT16-LBA boot partition, then root A, root B and
// /perm (Linux), in that order without overlap, the two roots the same size
// (A/B updates write either). It goes by shape, not by image.NewLayout's
// default sizes, so that an image built with other partition sizes (and the
// small synthetic images of the tests) are recognised too.
func (m *mbr) ncposLayout() error {
	p := m.Parts
	if p[partition.Boot-1].Type != 0x0e || !p[partition.Boot-1].Active {
		return fmt.Errorf("partition %d is not an active FAT16 (LBA) boot partition", partition.Boot)
	}
	for _, n := range []int{partition.RootA, partition.RootB, partition.Perm} {
		if p[n-1].Type != 0x83 {
			return fmt.Errorf("partition %d is type 0x%02x, not Linux (0x83)", n, p[n-1].Type)
		}
	}
	for i := range p {
		if p[i].Sectors == 0 {
			return fmt.Errorf("partition %d is empty", i+1)
		}
		if i > 0 && p[i].Start < p[i-1].Start+p[i-1].Sectors {
			return fmt.Errorf("partition %d starts inside partition %d", i+1, i)
		}
	}
	if p[partition.RootA-1].Sectors != p[partition.RootB-1].Sectors {
		return fmt.Errorf("root A and root B differ in size")
	}
	return nil
}

// perm is partition 4 of an ncpos table.
func (m *mbr) perm() mbrPart { return m.Parts[partition.Perm-1] }

// ext4Label reports whether an ext4 file system starts at off and its
// label. ext4 is the ext2 superblock magic at 1024+0x38 with the extents
// feature (incompat 0x40) that mke2fs -t ext4 sets.
func ext4Label(r io.ReaderAt, off int64) (label string, ok bool) {
	sb := make([]byte, 1024)
	if _, err := r.ReadAt(sb, off+1024); err != nil {
		return "", false
	}
	if binary.LittleEndian.Uint16(sb[0x38:]) != 0xEF53 {
		return "", false
	}
	if binary.LittleEndian.Uint32(sb[0x60:])&0x40 == 0 {
		return "", false
	}
	l := sb[0x78 : 0x78+16]
	for i, c := range l {
		if c == 0 {
			l = l[:i]
			break
		}
	}
	return string(l), true
}
