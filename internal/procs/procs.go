// Package procs finds processes by the name the kernel keeps for each
// (/proc/PID/comm: the program's name cut to 15 characters), for the
// programs that signal, pin, check or list a daemon by name.
package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Dir is where procfs is mounted: Proc on a running system, a folder of
// PID directories in tests.
type Dir string

// Proc is the system's procfs.
const Proc Dir = "/proc"

// Process is a running process.
type Process struct {
	PID  int
	Name string
}

// List returns every process; one that ends while it reads is left out.
func (d Dir) List() ([]Process, error) {
	ents, err := os.ReadDir(string(d))
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if name, err := d.Name(pid); err == nil {
			out = append(out, Process{PID: pid, Name: name})
		}
	}
	return out, nil
}

// Named returns the PIDs of the processes called name.
func (d Dir) Named(name string) []int {
	ps, _ := d.List()
	var pids []int
	for _, p := range ps {
		if p.Name == name {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// Name returns the name of process pid.
func (d Dir) Name(pid int) (string, error) {
	b, err := os.ReadFile(d.Path(pid, "comm"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Path is a file of process pid, such as Path(pid, "fd").
func (d Dir) Path(pid int, elem ...string) string {
	return filepath.Join(append([]string{string(d), strconv.Itoa(pid)}, elem...)...)
}
