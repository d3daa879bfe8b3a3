package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUTimes is one CPU's line of /proc/stat in clock ticks (USER_HZ).
type CPUTimes struct {
	CPU   int
	Modes map[string]uint64 // user, nice, system, idle, iowait, irq, softirq, steal
}

// cpuModes are the columns of a cpu line of /proc/stat, in order.
var cpuModes = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

// BusyTotal is the busy and the total time in ticks; idle and iowait
// count as not busy.
func (c CPUTimes) BusyTotal() (busy, total uint64) {
	for m, v := range c.Modes {
		total += v
		if m != "idle" && m != "iowait" {
			busy += v
		}
	}
	return busy, total
}

// ReadStat reads the per-CPU lines and the boot time (btime, seconds since
// the epoch, fixed for the boot, unlike now-minus-uptime) of /proc/stat.
func ReadStat(root string) (cpus []CPUTimes, btime int64, err error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/stat"))
	if err != nil {
		return nil, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		switch {
		case f[0] == "btime":
			btime, _ = strconv.ParseInt(f[1], 10, 64)
		case strings.HasPrefix(f[0], "cpu") && f[0] != "cpu":
			n, err := strconv.Atoi(f[0][3:])
			if err != nil {
				continue
			}
			ct := CPUTimes{CPU: n, Modes: map[string]uint64{}}
			for i, m := range cpuModes {
				if i+1 < len(f) {
					ct.Modes[m], _ = strconv.ParseUint(f[i+1], 10, 64)
				}
			}
			cpus = append(cpus, ct)
		}
	}
	return cpus, btime, sc.Err()
}

// LoadAvg returns the 1, 5 and 15 minute load averages.
func LoadAvg(root string) ([3]float64, error) {
	var l [3]float64
	b, err := os.ReadFile(filepath.Join(root, "proc/loadavg"))
	if err != nil {
		return l, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return l, fmt.Errorf("proc/loadavg: %q", b)
	}
	for i := range l {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l, nil
}

// FileHandles reads root/proc/sys/fs/file-nr: the file handles in use
// system-wide and the most there may be (fs.file-max).
func FileHandles(root string) (used, limit uint64, err error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/sys/fs/file-nr"))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, 0, fmt.Errorf("proc/sys/fs/file-nr: %q", b)
	}
	used, _ = strconv.ParseUint(f[0], 10, 64)
	limit, _ = strconv.ParseUint(f[2], 10, 64)
	return used, limit, nil
}

// BootID reads root/proc/sys/kernel/random/boot_id: the kernel's random
// ID of this boot, which tells one boot from the next.
func BootID(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/sys/kernel/random/boot_id"))
	return strings.TrimSpace(string(b)), err
}
