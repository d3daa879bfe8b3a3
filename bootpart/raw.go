package bootpart

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The box changes files on its boot partition only in place and at their
// own length, through the partition's device at the sectors the files
// occupy: no FAT, no directory entry (not even a time stamp) is ever
// written, so a power cut can tear only the sectors of the file being
// written, never another file's chain or entry. FAT has no journal, and no
// box would repair it.
const (
	ioctlFIBMAP   = 1 // linux/fs.h: _IO(0x00, 1), logical to physical block
	ioctlFIGETBSZ = 2 // linux/fs.h: _IO(0x00, 2), the block size FIBMAP uses
)

// extent is a run of a file's bytes on the device.
type extent struct{ fileOff, devOff, n int64 }

// extents maps the file at path (on a mounted vfat) to where its bytes lie
// on the partition.
func extents(path string) ([]extent, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	var bsz int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), ioctlFIGETBSZ, uintptr(unsafe.Pointer(&bsz))); e != 0 {
		return nil, 0, fmt.Errorf("block size of %s: %w", path, e)
	}
	if bsz <= 0 {
		return nil, 0, fmt.Errorf("block size of %s: %d", path, bsz)
	}
	b := int64(bsz)
	var out []extent
	for i := int64(0); i*b < fi.Size(); i++ {
		blk := int32(i)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), ioctlFIBMAP, uintptr(unsafe.Pointer(&blk))); e != 0 {
			return nil, 0, fmt.Errorf("mapping block %d of %s: %w", i, path, e)
		}
		if blk == 0 {
			return nil, 0, fmt.Errorf("block %d of %s is not allocated", i, path)
		}
		n := min(b, fi.Size()-i*b)
		if l := len(out) - 1; l >= 0 && out[l].devOff+out[l].n == int64(blk)*b && out[l].fileOff+out[l].n == i*b {
			out[l].n += n
			continue
		}
		out = append(out, extent{fileOff: i * b, devOff: int64(blk) * b, n: n})
	}
	return out, fi.Size(), nil
}

// writeRaw writes data at offset off of the file whose extents are ex
// (of size bytes), straight to the device dev, and syncs it.
func writeRaw(dev string, ex []extent, size, off int64, data []byte) error {
	if off < 0 || off+int64(len(data)) > size {
		return fmt.Errorf("%d bytes at %d do not fit a file of %d bytes: the box writes its boot files only in place, at their length", len(data), off, size)
	}
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	end := off + int64(len(data))
	for _, e := range ex {
		lo, hi := max(e.fileOff, off), min(e.fileOff+e.n, end)
		if lo >= hi {
			continue
		}
		if _, err := f.WriteAt(data[lo-off:hi-off], e.devOff+lo-e.fileOff); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", dev, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing %s: %w", dev, err)
	}
	return f.Close()
}

// overwrite writes data at offset off of the file name on the partition,
// in place: through the device when the box has one (the partition
// mounted read-only for the mapping and unmounted for the write), else
// through the file (Dev "": a copy of the files).
func (b *Box) overwrite(name string, off int64, data []byte) error {
	// Before, so that no listing is served from what is being changed,
	// and after, for one read between the mapping and the write.
	b.forget()
	defer b.forget()
	if b.Dev == "" {
		return b.with(func(dir string) error { return overwriteFile(dir+"/"+name, off, data) })
	}
	var (
		ex   []extent
		size int64
	)
	if err := b.with(func(dir string) (err error) {
		ex, size, err = extents(dir + "/" + name)
		return err
	}); err != nil {
		return fmt.Errorf("boot partition: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := writeRaw(b.Dev, ex, size, off, data); err != nil {
		return fmt.Errorf("boot partition %s: %w", name, err)
	}
	return nil
}

// overwriteFile is overwrite through the file.
func overwriteFile(path string, off int64, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && off+int64(len(data)) > fi.Size() {
		err = fmt.Errorf("%d bytes at %d do not fit %s of %d bytes: the box writes its boot files only in place, at their length", len(data), off, path, fi.Size())
	}
	if err == nil {
		_, err = f.WriteAt(data, off)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
