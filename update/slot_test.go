package update

import (
	"strings"
	"testing"

	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/web/api"
)

// The root the bootloader starts is read from the kernel command line;
// anything else is refused with what was expected.
func TestBootedRoot(t *testing.T) {
	for cmdline, want := range map[string]struct {
		sig  uint32
		part int
	}{
		"console=ttyS0 root=PARTUUID=adc02666-02 rootfstype=squashfs ro": {0xadc02666, 2},
		"root=PARTUUID=0000beef-03 init=/gokrazy/init":                   {0xbeef, 3},
	} {
		sig, part, err := bootedRoot(cmdline)
		if err != nil || sig != want.sig || part != want.part {
			t.Errorf("bootedRoot(%q) = %08x, %d, %v", cmdline, sig, part, err)
		}
	}
	for _, bad := range []string{
		"",
		"root=/dev/sda2",
		"root=PARTUUID=adc02666-04", // /perm is never a root
		"root=PARTUUID=adc02666-023",
		"root=PARTUUID=ADC0266-02",
	} {
		if _, _, err := bootedRoot(bad); err == nil || !strings.Contains(err.Error(), "names no root=PARTUUID=<sig>-02/03") {
			t.Errorf("bootedRoot(%q) = %v, want refused", bad, err)
		}
	}
}

// The running root is the booted one, unless gokrazy test-boots the other:
// then "/" is that partition's device.
func TestRunningRoot(t *testing.T) {
	for _, tc := range []struct {
		device string
		booted int
		want   int
	}{
		{"/dev/root", 2, 2},
		{"", 3, 3},
		{"/dev/sda3", 2, 3},
		{"/dev/mmcblk0p2", 3, 2},
		{"/dev/nvme0n1p3", 2, 3},
	} {
		s := &api.System{Root: sysinfo.Mount{Device: tc.device}}
		if got := runningRoot(s, tc.booted); got != tc.want {
			t.Errorf("runningRoot(%q, booted %d) = %d, want %d", tc.device, tc.booted, got, tc.want)
		}
	}
}
