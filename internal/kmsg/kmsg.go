// Package kmsg puts lines on the kernel log (/dev/kmsg), which the serial
// console and the boot log show: how a daemon tells an operator at the
// console what it found or made.
package kmsg

import (
	"fmt"
	"os"
)

// Path is the kernel log's device.
const Path = "/dev/kmsg"

// Levels of syslog(2) that the lines are logged at.
const (
	Notice = 5
	Info   = 6
)

// Write logs each line at level to the kernel log at path, one write per
// line, as the kernel takes one record per write.
func Write(path string, level int, lines ...string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := fmt.Fprintf(f, "<%d>%s\n", level, l); err != nil {
			return fmt.Errorf("writing to %s: %w", path, err)
		}
	}
	return nil
}
