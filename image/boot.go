package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ncpos/ncpos/bootpart"
)

// Cmdline is the kernel command line: root by PARTUUID (MBR disk signature
// and partition number, which gokrazy's rootdev parses to find /perm and the
// inactive root), gokrazy's init, and both consoles — VGA first, serial
// last so that /dev/console (init's output) is the serial line that CF/DOM
// boxes expose.
func Cmdline(diskSig uint32, rootPart int, extra ...string) string {
	args := []string{
		"console=tty0",
		"console=ttyS0,115200n8",
		fmt.Sprintf("root=PARTUUID=%08x-%02d", diskSig, rootPart),
		"rootfstype=squashfs",
		"ro",
		"rootwait",
		"init=/gokrazy/init",
		"panic=10",
		"oops=panic",
		// Stop any watchdog on a planned reboot or poweroff (drivers
		// without the flag would otherwise keep counting).
		"watchdog.stop_on_reboot=1",
	}
	return strings.Join(append(args, extra...), " ")
}

// BootFiles is what goes onto the boot partition.
type BootFiles struct {
	Kernel   []byte // both slots'
	DiskSig  uint32 // names the roots (root=PARTUUID=)
	Default  bootpart.Slot
	Label    string // FAT volume label
	VolumeID uint32
	Manifest []byte // the build's signed manifest (bootpart.ManifestFile); none when nil
}

// slotCmdline is the kernel command line of each slot.
func (f BootFiles) slotCmdline(s bootpart.Slot) string { return Cmdline(f.DiskSig, s.Partition()) }

// files are the boot partition's files but the loaders': a kernel and an
// entry per slot for either loader, the files naming the default slot,
// and cmdline.txt, which gokrazy's init reads at boot (it looks there for
// its own test-boot flag, which ncpos never sets: test boots are the
// loaders' boot-once).
func (f BootFiles) files() map[string][]byte {
	files := map[string][]byte{
		"cmdline.txt":                []byte(f.slotCmdline(bootpart.SlotA) + "\n"),
		"syslinux.cfg":               bootpart.SyslinuxConfig(f.slotCmdline),
		bootpart.SyslinuxDefaultFile: bootpart.SyslinuxDefault(f.Default),
		bootpart.LoaderConfFile:      bootpart.LoaderConf(f.Default),
	}
	for _, sl := range []bootpart.Slot{bootpart.SlotA, bootpart.SlotB} {
		files[sl.Kernel()] = f.Kernel
		files["loader/entries/"+sl.Entry()] = bootpart.LoaderEntry(sl, f.slotCmdline(sl))
	}
	if f.Manifest != nil {
		files[bootpart.ManifestFile] = f.Manifest
	}
	return files
}

// makeBoot creates the boot FAT file system image at out: kernels and
// entries, syslinux (legacy BIOS: ldlinux.sys and the FAT boot sector) and
// systemd-boot as the removable-media UEFI loader EFI/BOOT/BOOTX64.EFI.
func makeBoot(ctx context.Context, tmp, out string, size int64, f BootFiles) error {
	stage := filepath.Join(tmp, "bootfiles")
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return err
	}
	efi, err := os.ReadFile(systemdBootEFI)
	if err != nil {
		return fmt.Errorf("UEFI loader: %w (install systemd-boot-efi)", err)
	}
	files := f.files()
	files["EFI/BOOT/BOOTX64.EFI"] = efi
	for name, content := range files {
		p := filepath.Join(stage, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return err
		}
	}

	os.Remove(out)
	env := []string{"MTOOLS_SKIP_CHECK=1"}
	// One FAT copy: gokrazy's FAT reader, which finds cmdline.txt at
	// boot, assumes a single FAT.
	if err := run(ctx, nil, "mkfs.fat", "-C", "-F", "16", "-f", "1", "-n", f.Label,
		"-i", fmt.Sprintf("%08X", f.VolumeID), out, fmt.Sprint(size/1024)); err != nil {
		return fmt.Errorf("boot file system: %w", err)
	}
	for _, d := range []string{"::/EFI", "::/EFI/BOOT", "::/loader", "::/loader/entries"} {
		if err := run(ctx, env, "mmd", "-i", out, d); err != nil {
			return fmt.Errorf("boot file system: %w", err)
		}
	}
	for name := range files {
		if err := run(ctx, env, "mcopy", "-i", out, "-m", filepath.Join(stage, filepath.FromSlash(name)), "::/"+name); err != nil {
			return fmt.Errorf("boot file system: %w", err)
		}
	}
	if err := run(ctx, env, "syslinux", "--install", out); err != nil {
		return fmt.Errorf("legacy BIOS loader: %w", err)
	}
	return nil
}
