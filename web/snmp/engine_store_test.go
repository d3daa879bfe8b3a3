package snmp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineKeptAcrossStarts checks the engine ID stays and boots grows
// from start to start, and that a corrupt file is replaced, not fatal.
func TestEngineKeptAcrossStarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "snmp", "engine.json")
	id1, b1, note, err := LoadEngine(file)
	if err != nil || note != "" || b1 != 1 || len(id1) != 13 {
		t.Fatalf("first start: %x boots %d note %q err %v", id1, b1, note, err)
	}
	id2, b2, _, err := LoadEngine(file)
	if err != nil || !bytes.Equal(id1, id2) || b2 != 2 {
		t.Fatalf("second start: %x boots %d err %v, want %x boots 2", id2, b2, err, id1)
	}
	os.WriteFile(file, []byte("{garbage"), 0o600)
	id3, b3, note, err := LoadEngine(file)
	if err != nil || bytes.Equal(id3, id1) || b3 != 1 || !strings.Contains(note, "corrupt") {
		t.Fatalf("after corruption: %x boots %d note %q err %v", id3, b3, note, err)
	}
	// Without a writable /perm: a path that does not exist and cannot be
	// made, even by root (procfs takes no new directories).
	if _, b, note, err := LoadEngine("/proc/ncpt-no-perm/snmp/engine.json"); err != nil || b != 1 || !strings.Contains(note, "keeping the SNMP engine") {
		t.Errorf("unwritable: boots %d note %q err %v", b, note, err)
	}
}

// An engine file that cannot be read is left as it is: the engine runs
// this boot with an ID of its own and keeps none. A loop of links stands
// for any read error (EIO, EMFILE) that root cannot be denied.
func TestEngineLeavesUnreadable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "engine.json")
	if err := os.Symlink("engine.json", file); err != nil {
		t.Fatal(err)
	}
	id, boots, note, err := LoadEngine(file)
	if err != nil || len(id) == 0 || boots != 1 || !strings.Contains(note, "left as it is") {
		t.Fatalf("unreadable: %x boots %d note %q err %v", id, boots, note, err)
	}
	if fi, err := os.Lstat(file); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s was replaced: %v %v", file, fi, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left in %s: %v", dir, left)
	}
}
