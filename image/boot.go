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
	}
	return strings.Join(append(args, extra...), " ")
}

// cmdlinePad leaves room in cmdline.txt for in-place edits by gokrazy's
// update handlers (they rewrite the file without changing its length).
const cmdlinePad = 64

// BootFiles is what goes onto the boot partition.
type BootFiles struct {
	Kernel   []byte
	Cmdline  string
	Label    string // FAT volume label
	VolumeID uint32
}

// syslinuxConfig boots the kernel straight away and mirrors syslinux's own
// output to the serial port, for boxes with only a serial console.
func syslinuxConfig(cmdline string) string {
	return fmt.Sprintf(`SERIAL 0 115200
DEFAULT ncpos
PROMPT 0
TIMEOUT 0
LABEL ncpos
  LINUX /vmlinuz
  APPEND %s
`, cmdline)
}

// loaderEntry is the systemd-boot (Boot Loader Specification) entry.
func loaderEntry(cmdline string) string {
	return fmt.Sprintf("title ncpos\nlinux /vmlinuz\noptions %s\n", cmdline)
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
		"vmlinuz":                   f.Kernel,
		"cmdline.txt":               []byte(f.Cmdline + strings.Repeat(" ", cmdlinePad)),
		"syslinux.cfg":              []byte(syslinuxConfig(f.Cmdline)),
		"loader/loader.conf":        []byte("default ncpos.conf\ntimeout 0\nconsole-mode keep\n"),
		"loader/entries/ncpos.conf": []byte(loaderEntry(f.Cmdline)),
		"EFI/BOOT/BOOTX64.EFI":      efi,
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
	if err := run(ctx, nil, "mkfs.fat", "-C", "-F", "16", "-n", f.Label,
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
