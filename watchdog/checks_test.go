package watchdog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMemoryAndFDChecks(t *testing.T) {
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	os.MkdirAll(filepath.Join(proc, "sys/fs"), 0o755)
	meminfo := filepath.Join(proc, "meminfo")
	filenr := filepath.Join(proc, "sys/fs/file-nr")
	ctx := context.Background()

	os.WriteFile(meminfo, []byte("MemTotal: 1000000 kB\nMemFree: 10 kB\nMemAvailable: 500000 kB\n"), 0o644)
	if err := MemoryCheck(root, 0.05).Run(ctx); err != nil {
		t.Fatalf("50%% available: %v", err)
	}
	os.WriteFile(meminfo, []byte("MemTotal: 1000000 kB\nMemAvailable: 20000 kB\n"), 0o644)
	if err := MemoryCheck(root, 0.05).Run(ctx); err == nil || !strings.Contains(err.Error(), "2.0%") {
		t.Fatalf("2%% available: %v", err)
	}

	os.WriteFile(filenr, []byte("1000\t0\t100000\n"), 0o644)
	if err := FDCheck(root, 0.9).Run(ctx); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filenr, []byte("95000\t0\t100000\n"), 0o644)
	if err := FDCheck(root, 0.9).Run(ctx); err == nil {
		t.Fatal("95% of descriptors in use passed")
	}
}

func TestCheckPerm(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.MkdirAll(filepath.Join(root, "perm"), 0o755)
	mounts := filepath.Join(root, "proc/mounts")

	os.WriteFile(mounts, []byte("/dev/sda4 /perm ext4 rw,relatime 0 0\n"), 0o644)
	if err := checkPerm(root, 1); err != nil {
		t.Fatal(err)
	}
	if err := checkPerm(root, 1<<62); err == nil {
		t.Fatal("absurd free-space demand passed")
	}
	os.WriteFile(mounts, []byte("/dev/sda4 /perm ext4 ro,relatime 0 0\n"), 0o644)
	if err := checkPerm(root, 1); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("read-only /perm: %v", err)
	}
	os.WriteFile(mounts, []byte("tmpfs /tmp tmpfs rw 0 0\n"), 0o644)
	if err := checkPerm(root, 1); err == nil {
		t.Fatal("missing /perm passed")
	}
}
