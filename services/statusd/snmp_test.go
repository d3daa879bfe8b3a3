package main

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
	id1, b1, note, err := loadEngine(file)
	if err != nil || note != "" || b1 != 1 || len(id1) != 13 {
		t.Fatalf("first start: %x boots %d note %q err %v", id1, b1, note, err)
	}
	id2, b2, _, err := loadEngine(file)
	if err != nil || !bytes.Equal(id1, id2) || b2 != 2 {
		t.Fatalf("second start: %x boots %d err %v, want %x boots 2", id2, b2, err, id1)
	}
	os.WriteFile(file, []byte("{garbage"), 0o600)
	id3, b3, note, err := loadEngine(file)
	if err != nil || bytes.Equal(id3, id1) || b3 != 1 || !strings.Contains(note, "corrupt") {
		t.Fatalf("after corruption: %x boots %d note %q err %v", id3, b3, note, err)
	}
	ro := filepath.Join(t.TempDir(), "ro")
	os.MkdirAll(ro, 0o500)
	if os.Geteuid() != 0 { // root writes anyway
		if _, b, note, err := loadEngine(filepath.Join(ro, "x", "engine.json")); err != nil || b != 1 || note == "" {
			t.Errorf("unwritable: boots %d note %q err %v", b, note, err)
		}
	}
}
