package sysinfo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestMemory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemTotal:        2048000 kB\nMemFree: 10 kB\nMemAvailable:    1024000 kB\n"), 0o644)
	total, avail, err := Memory(p)
	if err != nil || total != 2048000<<10 || avail != 1024000<<10 {
		t.Fatalf("Memory = %d, %d, %v", total, avail, err)
	}
	os.WriteFile(p, []byte("MemFree: 10 kB\n"), 0o644)
	if _, _, err := Memory(p); !errors.Is(err, ErrNoMemTotal) {
		t.Fatalf("no MemTotal: %v", err)
	}
	if total, _, err := Memory("/proc/meminfo"); err != nil || total == 0 {
		t.Errorf("this machine's memory: %d, %v", total, err)
	}
}
