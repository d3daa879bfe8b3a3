package monitor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/web/api"
)

// cpuLoads compares two /proc/stat samples.
func cpuLoads(prev, cur []sysinfo.CPUTimes) []api.CPULoad {
	before := map[int]sysinfo.CPUTimes{}
	for _, c := range prev {
		before[c.CPU] = c
	}
	var out []api.CPULoad
	for _, c := range cur {
		l := api.CPULoad{CPU: c.CPU}
		if p, ok := before[c.CPU]; ok {
			b1, t1 := p.BusyTotal()
			b2, t2 := c.BusyTotal()
			if t2 > t1 && b2 >= b1 {
				l.BusyPercent = round1(100 * float64(b2-b1) / float64(t2-t1))
			}
		}
		out = append(out, l)
	}
	return out
}

func readMemory(root string) (api.Memory, error) {
	var m api.Memory
	var err error
	m.TotalBytes, m.AvailableBytes, err = sysinfo.Memory(filepath.Join(root, "proc/meminfo"))
	if errors.Is(err, sysinfo.ErrNoMemTotal) {
		return m, fmt.Errorf("proc/meminfo: %w", err)
	}
	if err != nil {
		return api.Memory{}, err
	}
	m.UsedPercent = round1(100 * float64(m.TotalBytes-min(m.AvailableBytes, m.TotalBytes)) / float64(m.TotalBytes))
	return m, nil
}

// readHwmon reads every temp*_input and fan*_input under
// /sys/class/hwmon: temperatures are in millidegrees Celsius there.
func readHwmon(root string) []api.Sensor {
	dirs, _ := filepath.Glob(filepath.Join(root, "sys/class/hwmon/hwmon*"))
	sort.Slice(dirs, func(i, j int) bool { return natLess(filepath.Base(dirs[i]), filepath.Base(dirs[j])) })
	var out []api.Sensor
	for _, dir := range dirs {
		chip := readTrim(filepath.Join(dir, "name"))
		if chip == "" {
			chip = filepath.Base(dir)
		}
		inputs, _ := filepath.Glob(filepath.Join(dir, "*_input"))
		sort.Slice(inputs, func(i, j int) bool { return natLess(inputs[i], inputs[j]) })
		for _, in := range inputs {
			base := strings.TrimSuffix(filepath.Base(in), "_input")
			var s api.Sensor
			switch {
			case strings.HasPrefix(base, "temp"):
				s = api.Sensor{Kind: "temperature", Unit: "°C"}
			case strings.HasPrefix(base, "fan"):
				s = api.Sensor{Kind: "fan", Unit: "RPM"}
			default:
				continue
			}
			v, err := strconv.ParseFloat(readTrim(in), 64)
			if err != nil {
				continue
			}
			s.Chip, s.Value = chip, v
			s.Label = readTrim(filepath.Join(dir, base+"_label"))
			if s.Label == "" {
				s.Label = base
			}
			if s.Kind == "temperature" {
				s.Value /= 1000
				if c, err := strconv.ParseFloat(readTrim(filepath.Join(dir, base+"_crit")), 64); err == nil {
					s.Crit = c / 1000
				}
			}
			out = append(out, s)
		}
	}
	return out
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func round1(f float64) float64 {
	return float64(int64(f*10+0.5)) / 10
}

// natLess orders names with numbers the way people count: LAN2 before
// LAN10, hwmon2 before hwmon10.
func natLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da != "" && db != "" {
			na, _ := strconv.Atoi(da)
			nb, _ := strconv.Atoi(db)
			if na != nb {
				return na < nb
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitsPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
