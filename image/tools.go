package image

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// debianPackage names the Debian package of each external tool, so a
// missing one is reported with the command that installs it.
var debianPackage = map[string]string{
	"mksquashfs": "squashfs-tools",
	"mkfs.fat":   "dosfstools",
	"mcopy":      "mtools",
	"mmd":        "mtools",
	"syslinux":   "syslinux",
	"mke2fs":     "e2fsprogs",
	"sfdisk":     "fdisk",
}

// Files from Debian packages that go into the image.
const (
	syslinuxMBR    = "/usr/lib/syslinux/mbr/mbr.bin"                 // syslinux-common
	systemdBootEFI = "/usr/lib/systemd/boot/efi/systemd-bootx64.efi" // systemd-boot-efi
)

// debianPackages is what `ncpos build` needs installed.
var debianPackages = []string{"squashfs-tools", "dosfstools", "mtools", "syslinux", "syslinux-common", "systemd-boot-efi", "e2fsprogs", "fdisk"}

// CheckTools reports every missing tool at once, with what installs it.
func CheckTools() error {
	var missing []string
	for tool, pkg := range debianPackage {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, fmt.Sprintf("%s (package %s)", tool, pkg))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools: %s; install them with: apt-get install %s",
			strings.Join(missing, ", "), strings.Join(debianPackages, " "))
	}
	return nil
}

// run runs a tool and returns its output in the error when it fails.
func run(ctx context.Context, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(cmd.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return nil
}

var execCommand = exec.CommandContext
