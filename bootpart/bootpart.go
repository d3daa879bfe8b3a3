// Package bootpart is the box's own boot partition (FAT: a kernel per
// root slot, loaders, boot entries), which the running system mounts only
// for a moment: to compare what an update brings with what is there, and
// to write, itself, what the update changes — the inactive slot's kernel,
// and which slot boots once and by default.
package bootpart

import (
	"crypto/sha256"
	"encoding/hex"
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

// device finds the boot partition: partition 1 of the disk that holds the
// root file system (root is "/" on the appliance).
func device(root string) (string, error) {
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

// HashTree returns the SHA-256 of every regular file under dir, by path
// relative to dir in lower case with slashes.
func HashTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		sum, err := hashFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[strings.ToLower(filepath.ToSlash(rel))] = sum
		return nil
	})
	return out, err
}

// hashFile is the SHA-256 of a file, in hex.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
