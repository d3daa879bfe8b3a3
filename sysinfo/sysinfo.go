// Package sysinfo reads what the status page shows about the running system
// from /proc and /sys: kernel, command line, mounts, uptime, interfaces and
// how much has been written to the boot disk (CF cards wear out). Every
// reader takes the file system root as a parameter so tests can use a fake
// tree.
package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Mount is one line of /proc/mounts.
type Mount struct {
	Device     string `json:"device"`
	MountPoint string `json:"mount_point"`
	FSType     string `json:"fs_type"`
	Options    string `json:"options"`
}

// ReadOnly says whether the mount has the ro option.
func (m Mount) ReadOnly() bool {
	for _, o := range strings.Split(m.Options, ",") {
		if o == "ro" {
			return true
		}
	}
	return false
}

// Mounts parses root/proc/mounts.
func Mounts(root string) ([]Mount, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/mounts"))
	if err != nil {
		return nil, err
	}
	var ms []Mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		ms = append(ms, Mount{Device: unescape(f[0]), MountPoint: unescape(f[1]), FSType: f[2], Options: f[3]})
	}
	return ms, sc.Err()
}

// unescape undoes the octal escapes (\040 for space) of /proc/mounts.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FindMount returns the last mount at mountPoint (the one in effect).
func FindMount(ms []Mount, mountPoint string) (Mount, bool) {
	var found Mount
	ok := false
	for _, m := range ms {
		if m.MountPoint == mountPoint {
			found, ok = m, true
		}
	}
	return found, ok
}

// KernelVersion is the first line of /proc/version.
func KernelVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/version"))
	return strings.TrimSpace(string(b)), err
}

// Cmdline is the kernel command line.
func Cmdline(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/cmdline"))
	return strings.TrimSpace(string(b)), err
}

// Uptime is the time since boot.
func Uptime(root string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/uptime"))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("proc/uptime: empty")
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("proc/uptime: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
