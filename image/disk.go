package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ncpos/ncpos/partition"
)

const sector = 512

// partitionTable writes the MBR partition table with sfdisk: boot (FAT16
// LBA, active, so syslinux's MBR code boots it), two roots and /perm. The
// disk signature is what root=PARTUUID= names.
func partitionTable(ctx context.Context, path string, l *Layout, diskSig uint32) error {
	var script strings.Builder
	fmt.Fprintf(&script, "label: dos\nlabel-id: 0x%08x\nunit: sectors\n\n", diskSig)
	for n := partition.Boot; n <= partition.Perm; n++ {
		typ := "83"
		extra := ""
		if n == partition.Boot {
			typ, extra = "e", ", bootable"
		}
		fmt.Fprintf(&script, "start=%d, size=%d, type=%s%s\n",
			l.Parts[n].Offset/sector, l.Parts[n].Size/sector, typ, extra)
	}
	cmd := execCommand(ctx, "sfdisk", "--no-reread", "--no-tell-kernel", "-q", path)
	cmd.Stdin = strings.NewReader(script.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("partition table: sfdisk: %v\n%s", err, out)
	}
	return nil
}

// writeBootCode puts syslinux's MBR boot code (the first 440 bytes) in
// front of the partition table; it chain-loads the active partition.
func writeBootCode(f *os.File) error {
	code, err := os.ReadFile(syslinuxMBR)
	if err != nil {
		return fmt.Errorf("MBR boot code: %w (install syslinux-common)", err)
	}
	if len(code) > 440 {
		return fmt.Errorf("MBR boot code %s is %d bytes, more than the 440 that fit", syslinuxMBR, len(code))
	}
	_, err = f.WriteAt(code, 0)
	return err
}

// copyPartition copies the file system image src into dst at offset, and
// refuses one that would overflow its partition. All-zero blocks are
// skipped, so the image file stays sparse.
func copyPartition(dst *os.File, src string, offset, size int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if st.Size() > size {
		return 0, fmt.Errorf("%s is %d MiB, larger than its %d MiB partition", src, st.Size()>>20, size>>20)
	}
	buf := make([]byte, 1<<20)
	zero := make([]byte, len(buf))
	var pos int64
	for {
		n, err := io.ReadFull(in, buf)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, werr := dst.WriteAt(buf[:n], offset+pos); werr != nil {
				return 0, werr
			}
		}
		pos += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return pos, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
