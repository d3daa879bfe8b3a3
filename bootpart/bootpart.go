// Package bootpart reads the box's own boot partition (FAT: kernel,
// loaders, boot entries), which the running system does not mount: an
// update compares what it would write there with what is there, and
// leaves the partition alone when nothing differs, so that an update of
// userland alone never rewrites the files the box boots from.
package bootpart

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/sysinfo"
)

// Device finds the boot partition: partition 1 of the disk that holds the
// root file system (root is "/" on the appliance).
func Device(root string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, "/"), &st); err != nil {
		return "", fmt.Errorf("stat /: %w", err)
	}
	disk, err := sysinfo.DiskOf(root, unix.Major(st.Dev), unix.Minor(st.Dev))
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "sys/block", disk)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("partitions of %s: %w", disk, err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "partition"))
		if err == nil && strings.TrimSpace(string(b)) == "1" {
			return filepath.Join(root, "dev", e.Name()), nil
		}
	}
	return "", fmt.Errorf("disk %s has no partition 1", disk)
}

// Hashes mounts the boot partition read-only at mnt (created and removed
// here) and returns the SHA-256 of every file on it, by path relative to
// its root in lower case (FAT does not keep case apart).
func Hashes(dev, mnt string) (map[string]string, error) {
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return nil, err
	}
	defer os.Remove(mnt)
	if err := unix.Mount(dev, mnt, "vfat", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("mounting the boot partition %s read-only: %w", dev, err)
	}
	out, err := HashTree(mnt)
	if uerr := unix.Unmount(mnt, 0); uerr != nil {
		err = errors.Join(err, fmt.Errorf("unmounting the boot partition: %w", uerr))
	}
	return out, err
}

// Read hashes the files of the boot partition of the box whose root is
// root, mounting it at mnt for the while.
func Read(root, mnt string) (map[string]string, error) {
	dev, err := Device(root)
	if err != nil {
		return nil, err
	}
	return Hashes(dev, mnt)
}

// HashTree returns the SHA-256 of every regular file under dir, by path
// relative to dir in lower case with slashes.
func HashTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[strings.ToLower(filepath.ToSlash(rel))] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	return out, err
}

// Differences lists the files of want that got has with other contents or
// not at all; none means writing want would change nothing that boots.
func Differences(want, got map[string]string) []string {
	var diff []string
	for name, h := range want {
		switch g, ok := got[strings.ToLower(name)]; {
		case !ok:
			diff = append(diff, name+" (missing)")
		case g != h:
			diff = append(diff, name)
		}
	}
	slices.Sort(diff)
	return diff
}
