// Package watchdog drives a Linux hardware watchdog for ncpos.
//
// github.com/mdlayher/watchdog opens /dev/watchdog and pets it, but it cannot
// take over a descriptor that init opened before gokrazy.Boot, set the
// timeout, read the time left or the boot status. Device adds those through
// the watchdog ioctls of <linux/watchdog.h>.
package watchdog

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Device is an open watchdog device. Once opened, the hardware counts down:
// something must Ping it within Timeout, or the machine resets.
type Device struct {
	f *os.File
	// Identity is the driver's name, e.g. "i6300ESB timer" or "iTCO_wdt".
	Identity string
	// Options is the WDIOF_* capability mask the driver reports.
	Options uint32
}

// Open opens the watchdog device at path (normally /dev/watchdog).
func Open(path string) (*Device, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	d, err := fromFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

// fromFile wraps an already open watchdog descriptor, e.g. one handed over by
// init.
func fromFile(f *os.File) (*Device, error) {
	info, err := unix.IoctlGetWatchdogInfo(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("watchdog: %s is not a watchdog device: %w", f.Name(), err)
	}
	return &Device{
		f:        f,
		Identity: strings.TrimRight(string(info.Identity[:]), "\x00"),
		Options:  info.Options,
	}, nil
}

// FromProcess duplicates descriptor fd of process pid (init hands the
// watchdog over this way, see services/init). It needs CAP_SYS_PTRACE over
// pid, which root has.
func FromProcess(pid, fd int) (*Device, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("watchdog: pidfd_open(%d): %w", pid, err)
	}
	defer unix.Close(pidfd)
	nfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return nil, fmt.Errorf("watchdog: pidfd_getfd(pid %d, fd %d): %w", pid, fd, err)
	}
	d, err := fromFile(os.NewFile(uintptr(nfd), fmt.Sprintf("pid%d-fd%d", pid, fd)))
	if err != nil {
		unix.Close(nfd)
		return nil, err
	}
	return d, nil
}

// Fd is the descriptor number, for handing the device to a child process.
func (d *Device) Fd() uintptr { return d.f.Fd() }

// File returns the underlying file.
func (d *Device) File() *os.File { return d.f }

// Ping restarts the countdown.
func (d *Device) Ping() error {
	if err := unix.IoctlWatchdogKeepalive(int(d.f.Fd())); err != nil {
		return fmt.Errorf("watchdog: keepalive: %w", err)
	}
	return nil
}

// Timeout is the current countdown length.
func (d *Device) Timeout() (time.Duration, error) {
	s, err := unix.IoctlGetInt(int(d.f.Fd()), unix.WDIOC_GETTIMEOUT)
	if err != nil {
		return 0, fmt.Errorf("watchdog: get timeout: %w", err)
	}
	return time.Duration(s) * time.Second, nil
}

// SetTimeout sets the countdown (whole seconds) and returns what the driver
// accepted, which may be rounded to the hardware's granularity.
func (d *Device) SetTimeout(t time.Duration) (time.Duration, error) {
	secs := int(t / time.Second)
	if secs < 1 {
		return 0, fmt.Errorf("watchdog: timeout %v is below one second", t)
	}
	if d.Options&unix.WDIOF_SETTIMEOUT == 0 {
		return 0, fmt.Errorf("watchdog: %s cannot change its timeout", d.Identity)
	}
	if err := unix.IoctlSetPointerInt(int(d.f.Fd()), unix.WDIOC_SETTIMEOUT, secs); err != nil {
		return 0, fmt.Errorf("watchdog: set timeout %ds: %w", secs, err)
	}
	return d.Timeout()
}

// TimeLeft is how long until the hardware resets the machine, where the
// driver can tell (i6300esb and iTCO_wdt can).
func (d *Device) TimeLeft() (time.Duration, error) {
	s, err := unix.IoctlGetInt(int(d.f.Fd()), unix.WDIOC_GETTIMELEFT)
	if err != nil {
		return 0, fmt.Errorf("watchdog: get time left: %w", err)
	}
	return time.Duration(s) * time.Second, nil
}

// BootStatus is the WDIOF_* mask of why the last boot happened; CardReset
// (WDIOF_CARDRESET) means the watchdog reset the machine.
func (d *Device) BootStatus() (uint32, error) {
	s, err := unix.IoctlGetInt(int(d.f.Fd()), unix.WDIOC_GETBOOTSTATUS)
	if err != nil {
		return 0, fmt.Errorf("watchdog: get boot status: %w", err)
	}
	return uint32(s), nil
}

// Disarm stops the countdown with the magic close ('V' then close), for a
// planned shutdown. Drivers built with nowayout ignore it.
func (d *Device) Disarm() error {
	_, werr := d.f.Write([]byte("V"))
	cerr := d.f.Close()
	if werr != nil {
		return fmt.Errorf("watchdog: magic close: %w", werr)
	}
	return cerr
}

// Close closes this descriptor without disarming: the countdown goes on.
func (d *Device) Close() error { return d.f.Close() }
