package sysinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUs reads one of the kernel's CPU lists under root: "online" or
// "possible" (/sys/devices/system/cpu/<which>). Per-CPU memory, BPF's
// per-CPU maps among it, is kept for every possible CPU.
func CPUs(root, which string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(root, "sys/devices/system/cpu", which))
	if err != nil {
		return nil, fmt.Errorf("reading %s CPUs: %w", which, err)
	}
	return parseCPUList(string(b))
}

// parseCPUList parses the kernel's CPU list format: "0-3,6,8-9".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
