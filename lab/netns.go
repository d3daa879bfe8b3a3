package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named namespaces live, for the lab as for iproute2.
const netnsDir = "/run/netns"

// Prefix starts the name of every namespace and interface the lab creates
// ("ncpos test"), so that a crashed test can always be cleaned up
// (Cleanup) and nothing of the host is ever touched.
const Prefix = "ncpt-"

// Netns is a named network namespace (/run/netns/NAME, as `ip netns`
// sees it) with a netlink handle inside it.
type Netns struct {
	Name string
	ns   netns.NsHandle
	nl   *netlink.Handle
}

// newNetns creates the named namespace. The calling thread is locked,
// switched in to create it and switched back, so no other goroutine ever
// runs inside it by accident.
func newNetns(name string) (*Netns, error) {
	if !strings.HasPrefix(name, Prefix) {
		return nil, fmt.Errorf("lab: namespace %q lacks the %q prefix", name, Prefix)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("lab: current namespace: %w", err)
	}
	defer orig.Close()
	var ns netns.NsHandle
	err = InNetnsDir(func() (err error) {
		ns, err = netns.NewNamed(name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lab: creating namespace %s: %w", name, err)
	}
	if err := netns.Set(orig); err != nil {
		// The thread is stuck in the new namespace: let it die with the
		// goroutine instead of returning it to the pool.
		runtime.LockOSThread()
		ns.Close()
		return nil, fmt.Errorf("lab: leaving namespace %s: %w", name, err)
	}
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		deleteNamed(name)
		return nil, fmt.Errorf("lab: netlink in %s: %w", name, err)
	}
	n := &Netns{Name: name, ns: ns, nl: nl}
	// Keep the kernel quiet: no IPv6 link-local addresses, router or
	// neighbour solicitations on the lab's interfaces, only test traffic.
	err = n.Do(func() error {
		for _, f := range []string{"all", "default"} {
			if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", f, "disable_ipv6"), []byte("1"), 0o644); err != nil {
				return err
			}
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	})
	if err != nil {
		n.Delete()
		return nil, fmt.Errorf("lab: setting up %s: %w", name, err)
	}
	return n, nil
}

// Do runs fn on a locked OS thread inside the namespace: BPF link creation,
// BPF_PROG_RUN live frames and sysctls all resolve interfaces in the
// calling thread's namespace.
func (n *Netns) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("lab: current namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(n.ns); err != nil {
		return fmt.Errorf("lab: entering %s: %w", n.Name, err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		runtime.LockOSThread() // never hand this thread back
		return errors.Join(ferr, fmt.Errorf("lab: leaving %s: %w", n.Name, err))
	}
	return ferr
}

// Link returns the named interface inside the namespace.
func (n *Netns) Link(name string) (netlink.Link, error) {
	l, err := n.nl.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("lab: %s in %s: %w", name, n.Name, err)
	}
	return l, nil
}

// Delete removes the namespace and with it every interface inside.
func (n *Netns) Delete() error {
	if n.nl != nil {
		n.nl.Close()
	}
	n.ns.Close()
	return deleteNamed(n.Name)
}

// deleteNamed unmounts and removes /run/netns/NAME. A file that is no
// longer a mount point (a namespace that is already gone) is removed all
// the same.
func deleteNamed(name string) error {
	p := filepath.Join(netnsDir, name)
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("lab: deleting namespace %s: %w", name, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lab: deleting namespace %s: %w", name, err)
	}
	return nil
}

// Cleanup deletes every namespace and host interface whose name starts
// with prefix (which must itself start with Prefix): what a killed test or
// an `ncpos lab up` left behind.
func Cleanup(prefix string) error {
	if !strings.HasPrefix(prefix, Prefix) {
		return fmt.Errorf("lab: cleanup prefix %q lacks %q", prefix, Prefix)
	}
	var errs []error
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := deleteNamed(e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, prefix) {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("deleting %s: %w", l.Attrs().Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// NewNetns creates the named namespace (its name starts with Prefix) for
// a test that builds its own wiring; the caller deletes it.
func NewNetns(name string) (*Netns, error) { return newNetns(name) }

// Tap creates a tap interface called name inside the namespace, up, and
// returns the file its frames are read from and written to, whole and
// without a header: a test plays the far end of a cable with it, say
// between a VM's port and a daemon in the namespace. Closing the file
// removes the interface.
func (n *Netns) Tap(name string) (*os.File, error) {
	if !strings.HasPrefix(name, Prefix) {
		return nil, fmt.Errorf("lab: tap %q lacks the %q prefix", name, Prefix)
	}
	var f *os.File
	err := n.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		ifr, err := unix.NewIfreq(name)
		if err == nil {
			ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err != nil {
			unix.Close(fd)
			return err
		}
		f = os.NewFile(uintptr(fd), name)
		l, err := netlink.LinkByName(name)
		if err == nil {
			err = netlink.LinkSetUp(l)
		}
		if err != nil {
			f.Close()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lab: tap %s in %s: %w", name, n.Name, err)
	}
	return f, nil
}
