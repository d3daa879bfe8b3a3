package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DiskWrites is what the block layer counted for one disk since boot.
type DiskWrites struct {
	Disk         string `json:"disk"`
	Writes       uint64 `json:"writes"`        // completed write requests
	BytesWritten uint64 `json:"bytes_written"` // sectors written × 512
}

// DiskOf returns the whole disk that block device major:minor belongs to
// ("vda2" -> "vda", "mmcblk0p2" -> "mmcblk0"), following /sys/dev/block the
// way the kernel names the parent, so it works for any naming scheme. It
// goes by device number because /proc/mounts shows the root as "/dev/root".
func DiskOf(root string, major, minor uint32) (string, error) {
	link, err := filepath.EvalSymlinks(filepath.Join(root, "sys/dev/block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return "", fmt.Errorf("block device %d:%d: %w", major, minor, err)
	}
	if _, err := os.Stat(filepath.Join(link, "partition")); err == nil {
		return filepath.Base(filepath.Dir(link)), nil
	}
	return filepath.Base(link), nil
}

// readDiskWrites reads the write counters of disk from /proc/diskstats
// (fields: major minor name, then reads, merged, sectors, ms, then writes,
// merged, sectors, ms …; sectors are always 512 bytes there).
func readDiskWrites(root, disk string) (DiskWrites, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/diskstats"))
	if err != nil {
		return DiskWrites{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[2] != disk {
			continue
		}
		writes, err1 := strconv.ParseUint(f[7], 10, 64)
		sectors, err2 := strconv.ParseUint(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			return DiskWrites{}, fmt.Errorf("proc/diskstats: bad line for %s: %q", disk, sc.Text())
		}
		return DiskWrites{Disk: disk, Writes: writes, BytesWritten: sectors * 512}, nil
	}
	return DiskWrites{}, fmt.Errorf("proc/diskstats: no disk %q", disk)
}

// BootDiskWrites finds the disk holding the root file system (by the device
// number of "/") and reads its write counters.
func BootDiskWrites(root string) (DiskWrites, error) {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, "/"), &st); err != nil {
		return DiskWrites{}, fmt.Errorf("stat /: %w", err)
	}
	disk, err := DiskOf(root, unix.Major(st.Dev), unix.Minor(st.Dev))
	if err != nil {
		return DiskWrites{}, err
	}
	return readDiskWrites(root, disk)
}
