package sysinfo

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// ErrNoMemTotal is a meminfo file without a MemTotal line.
var ErrNoMemTotal = errors.New("no MemTotal")

// Memory reads MemTotal and MemAvailable, in bytes, from a /proc/meminfo
// file.
func Memory(path string) (total, avail uint64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = kb << 10
		case "MemAvailable:":
			avail = kb << 10
		}
	}
	if total == 0 {
		return 0, avail, ErrNoMemTotal
	}
	return total, avail, nil
}
