package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStatReaders(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o644)
	}
	write("proc/stat", "cpu  10 0 10 80 0 0 0 0\ncpu0 4 0 6 40 0 0 0 0\ncpu1 6 0 4 40 0 0 0 0 0 0\nbtime 1764547200\n")
	write("proc/loadavg", "0.50 0.25 0.10 1/100 42\n")
	write("proc/sys/fs/file-nr", "1024\t0\t9223372036854775807\n")
	write("proc/sys/kernel/random/boot_id", "6e1b0c5e-8f1e-4b7a-9a55-4d3b1d2a7f00\n")

	cpus, btime, err := ReadStat(root)
	if err != nil || len(cpus) != 2 || btime != 1764547200 {
		t.Fatalf("stat: %v %d %v", cpus, btime, err)
	}
	if busy, total := cpus[1].BusyTotal(); busy != 10 || total != 50 {
		t.Errorf("cpu1 busy %d of %d, want 10 of 50", busy, total)
	}
	if l, err := LoadAvg(root); err != nil || l != [3]float64{0.5, 0.25, 0.1} {
		t.Errorf("loadavg %v %v", l, err)
	}
	if used, limit, err := FileHandles(root); err != nil || used != 1024 || limit != 9223372036854775807 {
		t.Errorf("file-nr %d %d %v", used, limit, err)
	}
	if id, err := BootID(root); err != nil || id != "6e1b0c5e-8f1e-4b7a-9a55-4d3b1d2a7f00" {
		t.Errorf("boot id %q %v", id, err)
	}
	write("proc/loadavg", "garbage\n")
	if _, err := LoadAvg(root); err == nil {
		t.Error("a loadavg of one field read")
	}
}
