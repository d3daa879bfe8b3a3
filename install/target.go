package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// RefusedError says why a target is not written. Nothing has been written
// when it is returned.
type RefusedError struct {
	Target  string
	Reasons []string
	Err     error // a sentinel such as ErrPermElsewhere, or nil
}

func (e *RefusedError) Unwrap() error { return e.Err }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing to write %s: %s; nothing was written", e.Target, strings.Join(e.Reasons, "; "))
}

func refuse(target string, reasons ...string) error {
	return &RefusedError{Target: target, Reasons: reasons}
}

// Target is a destination that passed the checks.
type Target struct {
	Path string
	File bool  // a regular file, allowed by Options.AllowFile
	Disk *Disk // the whole disk, when not File
	Rdev uint64
}

// Describe says what the target is, for the prompt: model, size, transport.
func (t *Target) Describe() string {
	if t.File {
		return "regular file"
	}
	var parts []string
	if t.Disk.Model != "" {
		parts = append(parts, t.Disk.Model)
	}
	parts = append(parts, human(t.Disk.Size), t.Disk.Transport)
	if t.Disk.Removable {
		parts = append(parts, "removable")
	}
	return strings.Join(parts, ", ")
}

// Check runs every refusal that does not need the image's content: the
// target must be a whole-disk block device (or a regular file when
// allowFile), not hold the running system, have nothing mounted or in use,
// be writable, and hold at least imageSize bytes (0 skips that check).
// root is "/" except in tests.
func Check(root, path string, allowFile bool, imageSize int64) (*Target, error) {
	return newHost(root).check(path, allowFile, imageSize)
}

func (h host) check(path string, allowFile bool, imageSize int64) (*Target, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if allowFile && errors.Is(err, unix.ENOENT) {
			return &Target{Path: path, File: true}, nil // -file: a new image file
		}
		return nil, fmt.Errorf("target %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if !allowFile {
			return nil, refuse(path, "it is a regular file, not a block device (pass -file to write into a file)")
		}
		return &Target{Path: path, File: true}, nil
	case unix.S_IFBLK:
	case unix.S_IFDIR:
		return nil, refuse(path, "it is a directory, not a block device")
	default:
		return nil, refuse(path, "it is not a block device")
	}
	link := h.path("sys/dev/block", fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)))
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return nil, fmt.Errorf("target %s: the kernel does not know block device %d:%d: %w",
			path, unix.Major(st.Rdev), unix.Minor(st.Rdev), err)
	}
	name := filepath.Base(real)
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		disk := filepath.Base(filepath.Dir(real))
		return nil, refuse(path, fmt.Sprintf("it is partition %s of disk %s; install onto the whole disk /dev/%s", name, disk, disk))
	}
	d, err := h.disk(name, h.systemDisks())
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", path, err)
	}
	if r := d.refusals(); len(r) > 0 {
		return nil, refuse(path, r...)
	}
	if imageSize > 0 && d.Size < imageSize {
		return nil, refuse(path, fmt.Sprintf("it holds %s (%d bytes), less than the image's %s (%d bytes)",
			human(d.Size), d.Size, human(imageSize), imageSize))
	}
	return &Target{Path: path, Disk: d, Rdev: st.Rdev}, nil
}
