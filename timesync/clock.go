package timesync

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Clock is the clock the keeper steers.
type Clock interface {
	Now() time.Time
	// Step moves the clock by d at once.
	Step(d time.Duration) error
	// Slew moves the clock by d gradually (the kernel's adjtime rate,
	// 0.5 ms a second), replacing any slew still under way.
	Slew(d time.Duration) error
	// Synced tells the kernel the clock is kept, within maxErr: its
	// status (node_exporter's timex) says so, and where the kernel
	// keeps the board's RTC it writes the time there every 11 minutes.
	Synced(maxErr time.Duration) error
}

// System is the kernel's clock, steered with adjtimex(2).
type System struct{}

// Now is the time of day.
func (System) Now() time.Time { return time.Now() }

// Step steps the clock by d (ADJ_SETOFFSET), which keeps the time the
// call itself takes out of the step.
func (System) Step(d time.Duration) error {
	sec, nsec := int64(d/time.Second), int64(d%time.Second)
	if nsec < 0 { // the kernel wants 0 <= nsec < 1e9
		sec, nsec = sec-1, nsec+int64(time.Second)
	}
	tx := unix.Timex{Modes: unix.ADJ_SETOFFSET | unix.ADJ_NANO, Time: unix.Timeval{Sec: sec, Usec: nsec}}
	if _, err := unix.Adjtimex(&tx); err != nil {
		return fmt.Errorf("stepping the clock by %v: %w", d, err)
	}
	return nil
}

// Slew slews the clock by d (ADJ_OFFSET_SINGLESHOT, adjtime(3)'s).
func (System) Slew(d time.Duration) error {
	tx := unix.Timex{Modes: unix.ADJ_OFFSET_SINGLESHOT, Offset: d.Microseconds()}
	if _, err := unix.Adjtimex(&tx); err != nil {
		return fmt.Errorf("slewing the clock by %v: %w", d, err)
	}
	return nil
}

// Synced clears the kernel's unsynchronised flag and sets its error
// bounds.
func (System) Synced(maxErr time.Duration) error {
	var tx unix.Timex
	if _, err := unix.Adjtimex(&tx); err != nil {
		return fmt.Errorf("reading the kernel's clock state: %w", err)
	}
	us := maxErr.Microseconds()
	tx = unix.Timex{Modes: unix.ADJ_STATUS | unix.ADJ_MAXERROR | unix.ADJ_ESTERROR,
		Status: tx.Status &^ unix.STA_UNSYNC, Maxerror: us, Esterror: us}
	if _, err := unix.Adjtimex(&tx); err != nil {
		return fmt.Errorf("marking the clock synced: %w", err)
	}
	return nil
}

// Kernel is the kernel's view of its clock, as node_exporter's timex
// collector reads it.
type Kernel struct {
	Synced   bool          // STA_UNSYNC clear
	Offset   time.Duration // the slew still under way
	MaxError time.Duration
	EstError time.Duration
}

// ReadKernel reads the kernel's clock state without changing it.
func ReadKernel() (Kernel, error) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return Kernel{}, fmt.Errorf("reading the kernel's clock state: %w", err)
	}
	off := time.Duration(tx.Offset) * time.Microsecond
	if tx.Status&unix.STA_NANO != 0 {
		off = time.Duration(tx.Offset)
	}
	return Kernel{Synced: state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0, Offset: off,
		MaxError: time.Duration(tx.Maxerror) * time.Microsecond, EstError: time.Duration(tx.Esterror) * time.Microsecond}, nil
}
