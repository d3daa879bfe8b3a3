package monitor

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

func TestNatLess(t *testing.T) {
	got := []string{"LAN10", "LAN2", "MGMT", "LAN1", "hwmon10", "hwmon2", "LAN1A", "WAN"}
	sort.Slice(got, func(i, j int) bool { return natLess(got[i], got[j]) })
	want := []string{"LAN1", "LAN1A", "LAN2", "LAN10", "MGMT", "WAN", "hwmon2", "hwmon10"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("natural order %v, want %v", got, want)
		}
	}
}

func TestRates(t *testing.T) {
	prev := api.PortCounters{RxPackets: 1000, TxPackets: 1000, RxBytes: 64000, TxBytes: 128000, RxDropped: 5}
	for _, tc := range []struct {
		name string
		cur  api.PortCounters
		dt   time.Duration
		want api.PortRates
	}{
		{"steady", api.PortCounters{RxPackets: 3000, TxPackets: 2000, RxBytes: 192000, TxBytes: 192000, RxDropped: 7, TxDropped: 2}, 2 * time.Second,
			api.PortRates{RxPPS: 1000, TxPPS: 500, RxBPS: 512000, TxBPS: 256000, DropsPS: 2}},
		{"counter reset", api.PortCounters{RxPackets: 10, TxPackets: 2000}, time.Second, api.PortRates{TxPPS: 1000}},
		{"no time", api.PortCounters{RxPackets: 5000}, 0, api.PortRates{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rates(prev, tc.cur, tc.dt); got != tc.want {
				t.Fatalf("rates = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHistoryRing(t *testing.T) {
	h := newHistory(4)
	if len(h.points(0)) != 0 {
		t.Fatal("new history not empty")
	}
	for i := int64(1); i <= 6; i++ {
		h.add(api.RatePoint{T: i})
	}
	all := h.points(0)
	if len(all) != 4 || all[0].T != 3 || all[3].T != 6 {
		t.Fatalf("points = %+v, want 3..6", all)
	}
	if two := h.points(2); len(two) != 2 || two[0].T != 5 {
		t.Fatalf("points(2) = %+v", two)
	}
}

func TestReaders(t *testing.T) {
	root := t.TempDir()
	w := func(name, s string) {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(s), 0o644)
	}
	w("proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\n")
	m, err := readMemory(root)
	if err != nil || m.TotalBytes != 1024000 || m.UsedPercent != 75 {
		t.Fatalf("memory = %+v, %v", m, err)
	}
	w("sys/class/net/eth9/operstate", "down\n")
	w("sys/class/net/eth9/speed", "-1\n")
	w("sys/class/net/eth9/duplex", "unknown\n")
	if state, speed, duplex := readLink(root, "eth9"); state != "down" || speed != -1 || duplex != "" {
		t.Fatalf("readLink = %q %d %q", state, speed, duplex)
	}
	if state, _, _ := readLink(root, "eth8"); state != "missing" {
		t.Fatalf("missing interface state %q", state)
	}
	if _, err := readPortCounters(root, "eth9"); err == nil {
		t.Fatal("counters of an interface without statistics")
	}
	w("sys/class/hwmon/hwmon3/name", "acpitz\n")
	w("sys/class/hwmon/hwmon3/temp1_input", "27800\n")
	w("sys/class/hwmon/hwmon3/temp2_input", "bogus\n")
	w("sys/class/hwmon/hwmon3/in0_input", "1200\n")
	s := readHwmon(root)
	if len(s) != 1 || s[0].Chip != "acpitz" || s[0].Label != "temp1" || s[0].Value != 27.8 {
		t.Fatalf("hwmon = %+v", s)
	}
	if (&api.System{Kernel: "Linux version 6.12.0-ncpos (x@y) #1"}).KernelRelease() != "6.12.0-ncpos" || (&api.System{Kernel: "odd"}).KernelRelease() != "odd" {
		t.Fatal("kernelRelease")
	}
}
