package sysinfo

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0":          {0},
		"0-3\n":      {0, 1, 2, 3},
		"0-1,4,6-7":  {0, 1, 4, 6, 7},
		"":           nil,
		"2,0-1":      {2, 0, 1},
		"10-11,13\n": {10, 11, 13},
	} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"a", "3-1", "1-x"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) succeeded", bad)
		}
	}
}

func TestCPUs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/devices/system/cpu")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "possible"), []byte("0-7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := CPUs(root, "possible"); err != nil || len(got) != 8 {
		t.Errorf("possible: %v, %v; want 8 CPUs", got, err)
	}
	if _, err := CPUs(root, "online"); err == nil {
		t.Error("a missing list read without error")
	}
}
