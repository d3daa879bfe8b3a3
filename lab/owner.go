package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerDir records which process owns each lab, so that a lab left by an
// interrupted run (its owner gone) can be told from one in use. It is on
// /run, as the namespaces are: a reboot forgets both.
const ownerDir = "/run/ncpos-lab"

func (l *Lab) ownerFile() string { return filepath.Join(ownerDir, l.ID) }

// claim makes this process the lab's owner. A lab of that ID whose owner
// still runs is refused; one whose owner is gone (or that has none) is
// removed first.
func (l *Lab) claim() error {
	used, _ := filepath.Glob(filepath.Join(netnsDir, l.Name("*")))
	if len(used) > 0 {
		if pid, alive := owner(l.ownerFile()); alive {
			return fmt.Errorf("lab: id %q is in use by pid %d (%s)", l.ID, pid, strings.Join(used, ", "))
		}
		if err := Cleanup(l.Name("")); err != nil {
			return fmt.Errorf("lab: removing what an interrupted run of lab %q left: %w", l.ID, err)
		}
	}
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return os.WriteFile(l.ownerFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// Remove removes what is left of lab id (a lab that was not closed, or
// that `ncpos lab up` left running): its namespaces and interfaces, its
// owner file, and the lab's /run/netns mount point once nothing is left in
// it.
func Remove(id string) error {
	err := Cleanup(Prefix + id + "-")
	if e := os.Remove(filepath.Join(ownerDir, id)); e != nil && !errors.Is(e, os.ErrNotExist) {
		err = errors.Join(err, e)
	}
	ReleaseNetnsDir()
	return err
}

// owner reads an owner file: the pid, and whether that process runs.
func owner(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	err = syscall.Kill(pid, 0)
	return pid, err == nil || errors.Is(err, syscall.EPERM)
}
