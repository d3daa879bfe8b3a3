package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// synced records the directories synced during f.
func synced(t *testing.T, f func()) []string {
	t.Helper()
	var dirs []string
	real := syncDir
	syncDir = func(dir string) error { dirs = append(dirs, dir); return real(dir) }
	defer func() { syncDir = real }()
	f()
	return dirs
}

func TestWriteFileSyncsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "password")
	dirs := synced(t, func() {
		if err := WriteFile(p, []byte("one\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if !slices.Equal(dirs, []string{dir}) {
		t.Errorf("synced %v, want %s", dirs, dir)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "one\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("%q %v", b, fi.Mode())
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Errorf("left in %s: %v", dir, left)
	}
}

func TestRemoveSyncsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "trial.toml")
	os.WriteFile(p, []byte("x"), 0o600)
	dirs := synced(t, func() {
		if err := Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := Remove(p); err != nil {
			t.Errorf("removing it again: %v", err)
		}
	})
	if !slices.Equal(dirs, []string{dir}) {
		t.Errorf("synced %v, want %s once", dirs, dir)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("still there: %v", err)
	}
}

func TestRenameSyncsBothDirectories(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(a, "key"), []byte("k"), 0o600)
	dirs := synced(t, func() {
		if err := Rename(filepath.Join(a, "key"), filepath.Join(b, "key.bad")); err != nil {
			t.Fatal(err)
		}
	})
	if !slices.Equal(dirs, []string{b, a}) {
		t.Errorf("synced %v, want %s and %s", dirs, b, a)
	}
	if err := Rename(filepath.Join(a, "missing"), filepath.Join(a, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("renaming a missing file: %v", err)
	}
}

func TestAppend(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "journal")
	dirs := synced(t, func() {
		for _, line := range []string{"a\n", "b\n"} {
			if err := Append(p, []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	// The directory once, for the new file.
	if !slices.Equal(dirs, []string{dir}) {
		t.Errorf("synced %v, want %s once", dirs, dir)
	}
	if b, _ := os.ReadFile(p); string(b) != "a\nb\n" {
		t.Errorf("journal %q", b)
	}
}

func TestWriteFileSyncError(t *testing.T) {
	real := syncDir
	syncDir = func(string) error { return errors.New("EIO") }
	defer func() { syncDir = real }()
	if err := WriteFile(filepath.Join(t.TempDir(), "f"), []byte("x"), 0o644); err == nil || err.Error() == "EIO" {
		t.Errorf("a failed directory sync: %v, want it reported with the directory", err)
	}
}

func TestReadFileTriesAgain(t *testing.T) {
	p := filepath.Join(t.TempDir(), "engine.json")
	os.WriteFile(p, []byte("kept"), 0o600)
	fails := 0
	readFile = func(name string) ([]byte, error) {
		if fails < 2 {
			fails++
			return nil, &os.PathError{Op: "read", Path: name, Err: syscall.EIO}
		}
		return os.ReadFile(name)
	}
	defer func() { readFile = os.ReadFile }()
	if b, err := ReadFile(p); err != nil || string(b) != "kept" {
		t.Errorf("two EIO, then the file: %q %v", b, err)
	}
	fails = -10
	if _, err := ReadFile(p); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "tried 3 times") {
		t.Errorf("EIO every time: %v", err)
	}
	readFile = os.ReadFile
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "tried") {
		t.Errorf("absent: %v, want fs.ErrNotExist at once", err)
	}
}
