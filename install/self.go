package install

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/sysinfo"
)

// BootDisk is the whole disk the running system booted from, e.g. /dev/sdb
// when an appliance runs from a USB stick.
func BootDisk(root string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", root, err)
	}
	disk, err := sysinfo.DiskOf(root, unix.Major(st.Dev), unix.Minor(st.Dev))
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "dev", disk), nil
}

// SelfOptions says where an appliance installs itself.
type SelfOptions struct {
	Target   string // internal disk, e.g. /dev/sda
	WipePerm bool   // do not keep the target's /perm when it holds ncpos
	Progress func(phase string, done, total int64)
}

// selfInstall copies the running appliance's own disk (a USB stick, say)
// onto an internal disk (a CF card or DOM), so a box can be installed
// without a second computer. It runs every check `ncpos install` runs, then
// makes the copy a box of its own: a new disk signature (with the old one,
// root=PARTUUID= could find the stick's partitions when both are present),
// the boot command lines following it, and, when /perm was copied rather
// than kept, only the stick's configuration on it (CopyKeeps) and a
// control password of its own.
func selfInstall(ctx context.Context, o SelfOptions) (*Result, error) {
	src, err := BootDisk("/")
	if err != nil {
		return nil, fmt.Errorf("finding the disk this system runs from: %w", err)
	}
	unix.Sync() // the copy of /perm is read from the live disk
	res, err := Install(ctx, Options{Image: src, Target: o.Target, WipePerm: o.WipePerm, Yes: true, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	pw, err := personalize(o.Target, !res.KeptPerm)
	if err != nil {
		if pw != "" {
			// The new password may be on the disk already.
			err = fmt.Errorf("%w (the control password written to its /perm, if it got there: %s)", err, pw)
		}
		return res, &WriteError{Target: o.Target, Phase: "personalizing", Done: res.Written, Total: res.Written, PermKept: res.KeptPerm, Err: err}
	}
	res.Notes = append(res.Notes, "new disk signature, boot command lines updated")
	if pw != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("control password of the installed disk (user ncpos): %s — note it now: it is kept nowhere else", pw))
	}
	return res, nil
}

// personalize gives the freshly written disk its own disk signature and,
// with cleanPerm, leaves only the source's configuration on the copied
// /perm (CopyKeeps) and gives it a control password of its own, which it
// returns.
func personalize(target string, cleanPerm bool) (string, error) {
	f, err := os.OpenFile(target, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tab, ok, err := readMBR(f)
	if err != nil || !ok {
		return "", fmt.Errorf("reading back the partition table: %v", err)
	}
	var b [4]byte
	var sig uint32
	for sig == 0 || sig == tab.DiskSig {
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		sig = binary.LittleEndian.Uint32(b[:])
	}
	binary.LittleEndian.PutUint32(b[:], sig)
	if _, err := f.WriteAt(b[:], 440); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	rereadPartitions(f)

	old := fmt.Sprintf("root=PARTUUID=%08x-", tab.DiskSig)
	neu := fmt.Sprintf("root=PARTUUID=%08x-", sig)
	if err := withMount(partitionPath(target, 1), "vfat", func(dir string) error {
		for _, name := range bootpart.EntryFiles {
			if err := replaceInFile(filepath.Join(dir, name), old, neu); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("boot partition: %w", err)
	}
	if !cleanPerm {
		return "", nil
	}
	pw, err := passwd.Random()
	if err != nil {
		return "", err
	}
	hash, err := passwd.Hash(pw)
	if err != nil {
		return "", err
	}
	return pw, withMount(partitionPath(target, 4), "ext4", func(dir string) error {
		if err := keepOnlyConfig(dir); err != nil {
			return err
		}
		pwFile := filepath.Join(dir, passwd.File)
		if err := os.MkdirAll(filepath.Dir(pwFile), 0o700); err != nil {
			return err
		}
		return durable.WriteFile(pwFile, append(hash, '\n'), 0o600)
	})
}

// copyKeeps is what a copied /perm keeps of the source box's: the
// operator's configuration and bypass profiles. Everything else is the
// source's own and is left out: its machine ID, TLS key, SNMP engine ID
// (two boxes with one engine ID and the same users share localized keys,
// against RFC 3411), control password (the copy gets its own), watchdog
// records, relay journal, overrides and self-test report (of runs the copy
// never made), and whatever a later build keeps there.
var copyKeeps = []string{"ncpos/ncpos.toml", "ncpos/last-good.toml", "ncpos/profiles"}

// keepOnlyConfig removes from a copied /perm at dir everything but
// CopyKeeps (and the file system's lost+found).
func keepOnlyConfig(dir string) error {
	keep := map[string]bool{}
	for _, k := range copyKeeps {
		for p := k; p != "."; p = filepath.Dir(p) {
			keep[p] = true
		}
	}
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := os.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := filepath.Join(rel, e.Name())
			switch {
			case slices.Contains(copyKeeps, p), p == "lost+found":
			case keep[p] && e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			default:
				if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
					return fmt.Errorf("leaving the source's %s out of the copy: %w", p, err)
				}
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

// replaceInFile replaces old by neu (of the same length) in place, so the
// file keeps its size and clusters.
func replaceInFile(path, old, neu string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), old) {
		return fmt.Errorf("%s does not name %s", path, old)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(strings.ReplaceAll(string(b), old, neu)), 0); err != nil {
		return err
	}
	return f.Sync()
}

// partitionPath names partition n of disk the kernel's way (sda1,
// nvme0n1p1, mmcblk0p1).
func partitionPath(disk string, n int) string {
	if last := disk[len(disk)-1]; last >= '0' && last <= '9' {
		return fmt.Sprintf("%sp%d", disk, n)
	}
	return fmt.Sprintf("%s%d", disk, n)
}

// withMount mounts dev (waiting for its node after the partition table was
// re-read), runs fn and unmounts.
func withMount(dev, fstype string, fn func(dir string) error) error {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(dev); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear: %w", dev, err)
		}
	}
	dir, err := os.MkdirTemp("", "ncpos-install-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := unix.Mount(dev, dir, fstype, 0, ""); err != nil {
		return fmt.Errorf("mounting %s: %w", dev, err)
	}
	ferr := fn(dir)
	if err := unix.Unmount(dir, 0); err != nil {
		return errors.Join(ferr, fmt.Errorf("unmounting %s: %w", dev, err))
	}
	return ferr
}
