package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// cmdlinePad leaves room after the command line for gokrazy's in-place
// edits: its update handlers rewrite cmdline.txt and the systemd-boot entry
// without changing their length (switching root= to the other partition,
// and appending " gokrazy.try_boot_inactive=1" before each newline for a
// one-shot test boot), so the padding must follow the last newline.
const cmdlinePad = 128

// BootFiles is what goes onto the boot partition.
type BootFiles struct {
	Kernel   []byte
	Cmdline  string
	Label    string // FAT volume label
	VolumeID uint32
	Manifest []byte // the build's signed manifest (ManifestFile); none when nil
}

// syslinuxConfig boots the kernel straight away and mirrors syslinux's own
// output to the serial port, for boxes with only a serial console. The
// command line comes from cmdline.txt (an APPEND line), the file gokrazy's
// update handlers edit, so that switching roots reaches legacy BIOS boots.
const syslinuxConfig = `SERIAL 0 115200
DEFAULT ncpos
PROMPT 0
TIMEOUT 0
LABEL ncpos
  LINUX /vmlinuz
  INCLUDE /cmdline.txt
`

// cmdlineFile is cmdline.txt: an APPEND line for syslinux, then padding.
func cmdlineFile(cmdline string) []byte {
	return []byte("APPEND " + cmdline + "\n" + strings.Repeat(" ", cmdlinePad))
}

// loaderEntry is the systemd-boot (Boot Loader Specification) entry. It is
// named gokrazy.conf because gokrazy's update handlers edit that file too:
// a test boot appends " gokrazy.try_boot_inactive=1" before every newline,
// so the linux line comes last, after the last newline, where no flag can
// reach it; the padding after it is trailing white space.
func loaderEntry(cmdline string) []byte {
	return []byte(fmt.Sprintf("title ncpos\noptions %s\nlinux /vmlinuz", cmdline) + strings.Repeat(" ", cmdlinePad))
}

// makeBoot creates the boot FAT file system image at out: kernel, command
// line, syslinux (legacy BIOS: ldlinux.sys and the FAT boot sector) and
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
	files := map[string][]byte{
		"vmlinuz":                     f.Kernel,
		"cmdline.txt":                 cmdlineFile(f.Cmdline),
		"syslinux.cfg":                []byte(syslinuxConfig),
		"loader/loader.conf":          []byte("default gokrazy.conf\ntimeout 0\nconsole-mode keep\n"),
		"loader/entries/gokrazy.conf": loaderEntry(f.Cmdline),
		"EFI/BOOT/BOOTX64.EFI":        efi,
	}
	if f.Manifest != nil {
		files[ManifestFile] = f.Manifest
	}
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
	// One FAT copy: gokrazy's FAT reader, which finds cmdline.txt for its
	// update handlers, assumes a single FAT.
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
	if err := lowercaseDirs(out, "loader", "loader/entries"); err != nil {
		return fmt.Errorf("boot file system: %w", err)
	}
	if err := run(ctx, env, "syslinux", "--install", out); err != nil {
		return fmt.Errorf("legacy BIOS loader: %w", err)
	}
	return nil
}
