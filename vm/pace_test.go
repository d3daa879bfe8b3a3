package vm

import (
	"strings"
	"testing"
	"time"
)

func TestPaceOf(t *testing.T) {
	boot := func(at string) string {
		return "[    0.000000] Linux version 6.12\n[" + at + "] Run /gokrazy/init as init process\n" +
			"[    9.100000] virtio_net virtio1 eth0: renamed\n"
	}
	for _, tc := range []struct {
		name    string
		console string
		healthz time.Duration
		uefi    bool
		want    float64
	}{
		{"nothing yet", "SeaBIOS (version 1.16.2)\n", 0, false, 1},
		{"faster than unloaded", boot("    1.500000"), 0, false, 1},
		{"a slow kernel", boot("    6.000000"), 0, false, 2},
		{"the slowest boot counts", boot("    4.500000") + boot("    9.000000") + boot("    3.000000"), 0, false, 3},
		{"a slow first boot under SeaBIOS", boot("    3.000000"), 26 * time.Second, false, 2},
		{"the same time under OVMF is not slow", boot("    3.000000"), 23 * time.Second, true, 1},
		{"capped", boot("  600.000000"), 0, false, MaxPace},
	} {
		p := PaceOf([]byte(tc.console), tc.healthz, tc.uefi)
		if p.Factor < tc.want-1e-9 || p.Factor > tc.want+1e-9 {
			t.Errorf("%s: factor %v, want %v (%v)", tc.name, p.Factor, tc.want, p)
		}
	}
	p := PaceOf([]byte(boot("    4.500000")+boot("    6.000000")), 13*time.Second, false)
	if s := p.String(); !strings.Contains(s, "pace 2.00×") || !strings.Contains(s, "4.5s, 6s") || !strings.Contains(s, "13s") {
		t.Errorf("String() = %q", s)
	}
	v := &VM{}
	if got := v.Within(time.Minute); got != time.Minute {
		t.Errorf("a VM without a serial log file scales a minute to %v", got)
	}
}
