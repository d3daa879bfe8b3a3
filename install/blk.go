package install

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// blkSize asks the kernel for a block device's size in bytes. It is checked
// against sysfs after the exclusive open, in case the medium changed.
func blkSize(f *os.File) (int64, error) {
	var n uint64
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0, errno
	}
	return int64(n), nil
}

// dropCache makes the read-back come from the medium rather than from the
// page cache that still holds what was just written: BLKFLSBUF empties a
// block device's buffer cache (after the fsync, the pages are clean), and
// POSIX_FADV_DONTNEED does the same for a regular file.
func dropCache(f *os.File, block bool) {
	if block {
		unix.IoctlRetInt(int(f.Fd()), unix.BLKFLSBUF)
	}
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// rereadPartitions tells the kernel the partition table changed (BLKRRPART),
// so /dev/sdX1… match the new layout without replugging.
func rereadPartitions(f *os.File) error {
	_, err := unix.IoctlRetInt(int(f.Fd()), unix.BLKRRPART)
	return err
}
