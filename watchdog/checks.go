package watchdog

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/sysinfo"
)

// LiveCheck passes while the daemon answers its /livez in time and says it
// is live: its loop runs and its engine works. What the daemon reports of
// the network or the box (a link down, a relay in bypass, a degraded
// /perm) is not asked here, since a reset mends none of it.
func LiveCheck(runDir, daemon string, timeout time.Duration) Check {
	c := ipc.NewClient(runDir, daemon, timeout)
	return Check{Name: daemon + " liveness", Run: c.Live}
}

// MemoryCheck (root is "/" on the appliance) passes while MemAvailable is at least minFraction of
// MemTotal: a box that is out of memory is about to fail in ways no other
// check sees.
func MemoryCheck(root string, minFraction float64) Check {
	return Check{Name: "memory headroom", Run: func(context.Context) error {
		total, avail, err := sysinfo.Memory(filepath.Join(root, "proc/meminfo"))
		if err != nil {
			return fmt.Errorf("meminfo: %w", err)
		}
		if frac := float64(avail) / float64(total); frac < minFraction {
			return fmt.Errorf("%d of %d KiB available (%.1f%%), want at least %.0f%%", avail>>10, total>>10, 100*frac, 100*minFraction)
		}
		return nil
	}}
}

// FDCheck passes while the system-wide open file count stays below
// maxFraction of fs.file-max.
func FDCheck(root string, maxFraction float64) Check {
	return Check{Name: "file descriptor headroom", Run: func(context.Context) error {
		used, max, err := sysinfo.FileHandles(root)
		if err != nil {
			return err
		}
		if max > 0 && float64(used) > maxFraction*float64(max) {
			return fmt.Errorf("%d of %d file descriptors in use", used, max)
		}
		return nil
	}}
}

// checkPerm says nil while /perm is mounted read-write (ext4 remounts
// read-only after I/O errors) and has room left. It does not write: a write
// every few seconds would wear out a CF card. A degraded /perm is a box
// condition, not a reason to reset: forwarding does not need /perm, and a
// reboot mends no worn card.
func checkPerm(root string, minFree uint64) error {
	return func() error {
		ms, err := sysinfo.Mounts(root)
		if err != nil {
			return err
		}
		m, ok := sysinfo.FindMount(ms, "/perm")
		if !ok {
			return fmt.Errorf("/perm is not mounted")
		}
		if m.ReadOnly() {
			return fmt.Errorf("/perm (%s) is mounted read-only", m.Device)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(filepath.Join(root, "perm"), &st); err != nil {
			return fmt.Errorf("statfs /perm: %w", err)
		}
		if free := st.Bavail * uint64(st.Bsize); free < minFree {
			return fmt.Errorf("/perm has %d bytes free, want at least %d", free, minFree)
		}
		return nil
	}()
}
