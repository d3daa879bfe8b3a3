package procs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestNamed(t *testing.T) {
	dir := t.TempDir()
	for pid, name := range map[string]string{"1": "init", "42": "forwarderd", "43": "forwarderd", "7": "statusd"} {
		os.MkdirAll(filepath.Join(dir, pid), 0o755)
		os.WriteFile(filepath.Join(dir, pid, "comm"), []byte(name+"\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "sys"), 0o755) // not a process
	os.MkdirAll(filepath.Join(dir, "99"), 0o755)  // ended: no comm
	d := Dir(dir)

	got := d.Named("forwarderd")
	slices.Sort(got)
	if !slices.Equal(got, []int{42, 43}) {
		t.Errorf("Named(forwarderd) = %v, want [42 43]", got)
	}
	if got := d.Named("bypassd"); len(got) != 0 {
		t.Errorf("Named(bypassd) = %v, want none", got)
	}
	if ps, err := d.List(); err != nil || len(ps) != 4 {
		t.Errorf("List found %d processes (%v), want 4", len(ps), err)
	}
	if name, err := d.Name(7); err != nil || name != "statusd" {
		t.Errorf("Name(7) = %q, %v", name, err)
	}
	if _, err := d.Name(99); err == nil {
		t.Error("Name of an ended process: no error")
	}
	if _, err := Dir(filepath.Join(dir, "none")).List(); err == nil {
		t.Error("List of a missing procfs: no error")
	}
}

// TestSelf finds this test's own process on the real /proc.
func TestSelf(t *testing.T) {
	name, err := Proc.Name(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(Proc.Named(name), os.Getpid()) {
		t.Errorf("Named(%q) does not hold this process (%d)", name, os.Getpid())
	}
}
