package bootpart

import (
	"fmt"
	"strings"

	"github.com/ncpos/ncpos/partition"
)

// A Slot is one of the two roots with the kernel that boots it: slot a is
// root partition 2 with vmlinuz-a, slot b root partition 3 with
// vmlinuz-b. Each slot has its own boot entry for either loader (a
// syslinux label, a systemd-boot entry), so that a test boot of a new
// build tests its kernel too, and a fallback returns to the old kernel.
type Slot string

// The two slots.
const (
	SlotA Slot = "a"
	SlotB Slot = "b"
)

// SlotOf is the slot of root partition n.
func SlotOf(n int) (Slot, error) {
	switch n {
	case partition.RootA:
		return SlotA, nil
	case partition.RootB:
		return SlotB, nil
	}
	return "", fmt.Errorf("partition %d is no root partition (want %d or %d)", n, partition.RootA, partition.RootB)
}

// parseSlot reads a slot's name.
func parseSlot(s string) (Slot, error) {
	switch Slot(s) {
	case SlotA, SlotB:
		return Slot(s), nil
	}
	return "", fmt.Errorf("boot slot %q: want a or b", s)
}

// Partition is the slot's root partition.
func (s Slot) Partition() int {
	if s == SlotB {
		return partition.RootB
	}
	return partition.RootA
}

// Other is the other slot.
func (s Slot) Other() Slot {
	if s == SlotB {
		return SlotA
	}
	return SlotB
}

// Kernel is the slot's kernel file on the boot partition.
func (s Slot) Kernel() string { return "vmlinuz-" + string(s) }

// Entry is the slot's systemd-boot entry ID: its file name under
// loader/entries.
func (s Slot) Entry() string { return "ncpos-" + string(s) + ".conf" }

// KernelFileSize is the size of each slot's kernel file: the kernel
// padded with zeros, which the loaders load and the kernel ignores, so
// that a new kernel is written over the old one in place, at the same
// length. It leaves room for a kernel half again as large as today's.
const KernelFileSize = 24 << 20

// PadKernel pads a kernel to KernelFileSize.
func PadKernel(k []byte) ([]byte, error) {
	if len(k) > KernelFileSize {
		return nil, fmt.Errorf("kernel of %d bytes is larger than a slot's kernel file (%d bytes)", len(k), KernelFileSize)
	}
	out := make([]byte, KernelFileSize)
	copy(out, k)
	return out, nil
}

// ManifestFile is where the build's signed manifest lies on the boot
// partition, for `ncpos update` to send before the parts it names.
const ManifestFile = "ncpos-manifest.json"

// Files on the boot partition that say which slot boots by default. Both
// are rewritten in place at the same length, so a power cut leaves the
// one sector they occupy old or new, never a file half written.
const (
	SyslinuxDefaultFile = "slot.cfg"           // included by syslinux.cfg
	LoaderConfFile      = "loader/loader.conf" // systemd-boot's
	// syslinuxFile holds syslinux's auxiliary data vector (ADV), where
	// its boot-once command lives.
	syslinuxFile = "ldlinux.sys"
)

// SyslinuxDefault is slot.cfg naming s.
func SyslinuxDefault(s Slot) []byte { return []byte("DEFAULT " + string(s) + "\n") }

// LoaderConf is systemd-boot's loader.conf naming s.
func LoaderConf(s Slot) []byte {
	return []byte("default " + s.Entry() + "\ntimeout 0\nconsole-mode keep\n")
}

// SyslinuxConfig boots slot.cfg's slot straight away, or the boot-once
// label syslinux finds in its ADV, and mirrors syslinux's own output to
// the serial port, for boxes with only a serial console. cmdline gives
// each slot's kernel command line.
func SyslinuxConfig(cmdline func(Slot) string) []byte {
	var b strings.Builder
	b.WriteString("SERIAL 0 115200\nPROMPT 0\nTIMEOUT 0\nINCLUDE /" + SyslinuxDefaultFile + "\n")
	for _, s := range []Slot{SlotA, SlotB} {
		fmt.Fprintf(&b, "LABEL %s\n  LINUX /%s\n  APPEND %s\n", s, s.Kernel(), cmdline(s))
	}
	return []byte(b.String())
}

// LoaderEntry is the slot's systemd-boot (Boot Loader Specification)
// entry.
func LoaderEntry(s Slot, cmdline string) []byte {
	return []byte(fmt.Sprintf("title ncpos (root %s)\nlinux /%s\noptions %s\n", s, s.Kernel(), cmdline))
}

// defaultIn reads the slot a default file names.
func defaultIn(b []byte, prefix, suffix string) (Slot, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	name, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if !ok {
		return "", fmt.Errorf("first line %q does not start with %q", line, prefix)
	}
	name, ok = strings.CutSuffix(strings.TrimSpace(name), suffix)
	if !ok {
		return "", fmt.Errorf("first line %q does not end with %q", line, suffix)
	}
	return parseSlot(strings.TrimPrefix(name, "ncpos-"))
}
