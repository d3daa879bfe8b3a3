package bootpart

import (
	"strings"
	"testing"
)

// The root the bootloader starts is read from the kernel command line;
// anything else is refused with what was expected.
func TestRoot(t *testing.T) {
	for cmdline, want := range map[string]struct {
		sig  uint32
		part int
	}{
		"console=ttyS0 root=PARTUUID=adc02666-02 rootfstype=squashfs ro": {0xadc02666, 2},
		"root=PARTUUID=0000beef-03 init=/gokrazy/init":                   {0xbeef, 3},
	} {
		sig, part, err := Root(cmdline)
		if err != nil || sig != want.sig || part != want.part {
			t.Errorf("Root(%q) = %08x, %d, %v", cmdline, sig, part, err)
		}
	}
	for _, bad := range []string{
		"",
		"root=/dev/sda2",
		"root=PARTUUID=adc02666-04", // /perm is never a root
		"root=PARTUUID=adc02666-023",
		"root=PARTUUID=ADC0266-02",
	} {
		if _, _, err := Root(bad); err == nil || !strings.Contains(err.Error(), "names no root=PARTUUID=<sig>-02/03") {
			t.Errorf("Root(%q) = %v, want refused", bad, err)
		}
	}
}
