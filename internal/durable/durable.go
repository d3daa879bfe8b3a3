// Package durable writes files that must survive a power cut once the
// write returns: /perm on the box (passwords, keys, the SNMP boots
// counter, the last good configuration, overrides, records) and the build
// host's keys and inventories. A rename or a new file is on disk only once
// its directory is synced too, which renameio alone does not do: without
// it, a cut right after an acknowledged change can bring back the old
// file (a rotated password, a boots counter that repeats).
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
)

// syncDir is replaced by tests to see which directories are synced.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SyncDir makes the entries of dir (renames, new and removed files)
// durable.
func SyncDir(dir string) error {
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// WriteFile replaces path with data: after it returns, path holds data
// whatever happens next; before, the old content or the new one, never a
// mix.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := renameio.WriteFile(path, data, perm); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// WriteFileFrom replaces path with what write writes into the file it is
// given (which it may also truncate), for content that streams in: as
// with WriteFile, path then holds all of it or, if write or anything
// after it fails, what it held before.
func WriteFileFrom(path string, perm fs.FileMode, write func(f *os.File) error) error {
	t, err := renameio.NewPendingFile(path, renameio.WithPermissions(perm))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if err := write(t.File); err != nil {
		return err
	}
	if err := t.CloseAtomicallyReplace(); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Rename renames oldpath to newpath, durably.
func Rename(oldpath, newpath string) error {
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(newpath)); err != nil {
		return err
	}
	if filepath.Dir(oldpath) != filepath.Dir(newpath) {
		return SyncDir(filepath.Dir(oldpath))
	}
	return nil
}

// Remove removes path, durably; a path that is not there is no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Append adds data at the end of path, creating it with perm, and returns
// once it is on disk.
func Append(path string, data []byte, perm fs.FileMode) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// readFile is replaced by tests to fail a read now and then.
var readFile = os.ReadFile

// ReadTries and ReadPause are how often ReadFile tries and how long it
// waits between tries.
const (
	ReadTries = 3
	ReadPause = 200 * time.Millisecond
)

// ReadFile reads a kept file, trying again when the read fails for any
// reason but the file's absence (EIO on a tired card, EMFILE, ENOMEM): a
// read that fails is no sign of a damaged file, and whoever replaced a
// kept identity on such an error would lose it for good. The error of the
// last try is returned, fs.ErrNotExist at once.
func ReadFile(path string) ([]byte, error) {
	var err error
	for try := 1; try <= ReadTries; try++ {
		var b []byte
		if b, err = readFile(path); err == nil || errors.Is(err, fs.ErrNotExist) {
			return b, err
		}
		if try < ReadTries {
			time.Sleep(ReadPause)
		}
	}
	return nil, fmt.Errorf("%w (tried %d times)", err, ReadTries)
}
