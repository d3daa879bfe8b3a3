package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// /run/netns, where named namespaces live, is shared with iproute2 and
// with every other lab process on the machine. Before the lab names a
// namespace there, /run/netns is made a shared mount point, as `ip netns
// add` does before its first (iproute2, ip/ipnetns.c): make it shared;
// where that fails because it is not a mount point yet, bind it onto
// itself, recursively, and make it shared. Done by both, neither ever binds
// the directory over the other's namespace files. Without it, an `ip netns
// add` after the lab had named its namespaces bound /run/netns over them,
// and the lab could no longer use or delete them.
//
// A lock file serialises, across processes, making the mount point and
// naming a namespace in it against taking the mount point away again; a
// marker says that the lab made it (one that iproute2 or the host made is
// never taken away).
var (
	netnsLock   = filepath.Join(ownerDir, "netns.lock")
	netnsMarker = filepath.Join(ownerDir, "netns.mounted")
)

// lockNetnsDir takes the lock; unlock releases it.
func lockNetnsDir() (unlock func(), err error) {
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	f, err := os.OpenFile(netnsLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lab: locking %s: %w", netnsLock, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// InNetnsDir runs fn, which names a namespace in /run/netns, with
// /run/netns a shared mount point and under the lock.
func InNetnsDir(fn func() error) error {
	unlock, err := lockNetnsDir()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("lab: making %s a mount point: %w", netnsDir, err)
		}
		if err := os.WriteFile(netnsMarker, nil, 0o644); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("lab: making %s shared: %w", netnsDir, err)
	}
	return fn()
}

// ReleaseNetnsDir takes away the mount point the lab made once no named
// namespace is left in /run/netns, so that the lab leaves no mount behind.
func ReleaseNetnsDir() {
	unlock, err := lockNetnsDir()
	if err != nil {
		return
	}
	defer unlock()
	if _, err := os.Stat(netnsMarker); err != nil {
		return // not the lab's
	}
	if ents, err := os.ReadDir(netnsDir); err != nil || len(ents) > 0 {
		return
	}
	if err := unix.Unmount(netnsDir, 0); err == nil || errors.Is(err, unix.EINVAL) {
		os.Remove(netnsMarker)
	}
}
