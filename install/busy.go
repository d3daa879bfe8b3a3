package install

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/sysinfo"
)

// systemDisks returns the whole disks the running system's root file system
// lives on. It goes by the device number of "/" (which /proc/mounts may
// only call "/dev/root"), and follows device-mapper and md "slaves" down to
// the disks below, so a root on LVM or RAID still marks its disks. When the
// root is not on a block device (overlay, tmpfs, NFS) it falls back to the
// device /proc/mounts names for "/"; when that fails too it returns nothing,
// and the mount check (the root is mounted) still protects the disk.
func (h host) systemDisks() map[string]bool {
	var name string
	if dev, err := h.rootDev(); err == nil {
		name, _ = sysinfo.DiskOf(h.root, unix.Major(dev), unix.Minor(dev))
	}
	if name == "" {
		if ms, err := sysinfo.Mounts(h.root); err == nil {
			if m, ok := sysinfo.FindMount(ms, "/"); ok {
				name = h.devName(m.Device)
			}
		}
	}
	disks := map[string]bool{}
	if name != "" {
		h.lowerDisks(name, disks, 0)
	}
	return disks
}

// lowerDisks adds the whole disks under name (a disk, a partition, or a
// dm/md device) to out.
func (h host) lowerDisks(name string, out map[string]bool, depth int) {
	if depth > 16 {
		return // a loop in sysfs would be a kernel bug; don't hang on it
	}
	if disk := h.diskOfPartition(name); disk != "" {
		name = disk
	}
	slaves, _ := os.ReadDir(h.path("sys/block", name, "slaves"))
	if len(slaves) == 0 {
		out[name] = true
		return
	}
	for _, s := range slaves {
		h.lowerDisks(s.Name(), out, depth+1)
	}
}

// diskOfPartition returns the disk partition part belongs to, "" when part
// is not a partition.
func (h host) diskOfPartition(part string) string {
	real, err := filepath.EvalSymlinks(h.path("sys/class/block", part))
	if err != nil {
		// Older or fake trees without sys/class/block: search sys/block.
		ents, _ := os.ReadDir(h.path("sys/block"))
		for _, e := range ents {
			if _, err := os.Stat(h.path("sys/block", e.Name(), part, "partition")); err == nil {
				return e.Name()
			}
		}
		return ""
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		return filepath.Base(filepath.Dir(real))
	}
	return ""
}

// devName maps a device path from /proc/mounts or /proc/swaps to a kernel
// block device name. It stats the path first (which follows /dev/disk/by-*
// and /dev/mapper symlinks, and works for any naming); when that fails, as
// it does in a fake tree, it goes by the name, looking /dev/mapper names up
// among the dm devices. Non-device sources ("proc", "tmpfs") give "".
func (h host) devName(dev string) string {
	if !strings.HasPrefix(dev, "/") {
		return ""
	}
	var st unix.Stat_t
	if err := unix.Stat(h.path(dev), &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
		if real, err := filepath.EvalSymlinks(h.path("sys/dev/block",
			fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)))); err == nil {
			return filepath.Base(real)
		}
	}
	base := filepath.Base(dev)
	if strings.HasPrefix(dev, "/dev/mapper/") {
		ents, _ := os.ReadDir(h.path("sys/block"))
		for _, e := range ents {
			if h.readSys("sys/block", e.Name(), "dm/name") == base {
				return e.Name()
			}
		}
	}
	return base
}

// busy lists why disk is in use: a holder (device-mapper, md, bcache …) on
// the disk or one of its partitions, a mount of any of them or of a holder,
// or any of them used as swap. Each reason names the device.
func (h host) busy(disk string, parts []string) []string {
	var reasons []string
	// owner maps every device that counts as part of the disk to how it
	// relates to it, for the messages.
	owner := map[string]string{disk: "disk " + disk}
	for _, p := range parts {
		owner[p] = "partition " + p
	}
	// Holders, recursively: dm-0 holds sdb2, dm-1 holds dm-0, …
	queue := []struct{ dir, name string }{{h.path("sys/block", disk), disk}}
	for _, p := range parts {
		queue = append(queue, struct{ dir, name string }{h.path("sys/block", disk, p), p})
	}
	for len(queue) > 0 && len(owner) < 256 {
		q := queue[0]
		queue = queue[1:]
		hs, _ := os.ReadDir(filepath.Join(q.dir, "holders"))
		for _, e := range hs {
			hn := e.Name()
			if _, seen := owner[hn]; seen {
				continue
			}
			desc := hn
			if dm := h.readSys("sys/block", hn, "dm/name"); dm != "" {
				desc = fmt.Sprintf("%s (%s)", hn, dm)
			}
			owner[hn] = fmt.Sprintf("%s, holding %s,", desc, q.name)
			reasons = append(reasons, fmt.Sprintf("%s is in use by %s", q.name, desc))
			queue = append(queue, struct{ dir, name string }{h.path("sys/block", hn), hn})
		}
	}

	if ms, err := sysinfo.Mounts(h.root); err == nil {
		for _, m := range ms {
			if o, ok := owner[h.devName(m.Device)]; ok {
				reasons = append(reasons, fmt.Sprintf("%s is mounted on %s", o, m.MountPoint))
			}
		}
	} else {
		reasons = append(reasons, fmt.Sprintf("cannot tell whether it is mounted: %v", err))
	}

	for _, sw := range h.swaps() {
		if o, ok := owner[h.devName(sw)]; ok {
			reasons = append(reasons, fmt.Sprintf("%s is in use as swap", o))
		}
	}
	return reasons
}

// swaps lists the device (or file) paths of /proc/swaps. A system without
// swap support has no such file, which means no swap.
func (h host) swaps() []string {
	b, err := os.ReadFile(h.path("proc/swaps"))
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 2 {
			continue // header: Filename Type Size Used Priority
		}
		out = append(out, strings.ReplaceAll(f[0], `\040`, " "))
	}
	return out
}
