package image

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// RootFiles is what goes into the root file system besides the programs.
type RootFiles struct {
	Hostname   string
	ConfigTOML []byte // /etc/ncpos/ncpos.toml
	BuildID    string
	CACerts    string // host CA bundle for /etc/ssl/ca-bundle.pem; optional
	// Built is the build's time (/etc/ncpos/built), by which the
	// appliance tells an update from a downgrade.
	Built time.Time
	// TrustedKeys are the keys it takes updates from
	// (/etc/ncpos/update-keys).
	TrustedKeys []ed25519.PublicKey
	// SecurityVersion is the build's anti-rollback index
	// (/etc/ncpos/security-version).
	SecurityVersion uint32
}

// stageRoot lays out in dir the tree gokrazy's init expects (see gokrazy's
// packer): mount points, /var -> /perm/var, /etc with hostname, hosts,
// resolv.conf -> /tmp/resolv.conf. There is no /etc/gokr-pw.txt: without
// it gokrazy serves its web UI and update endpoints only on its unix
// socket, which statusd reaches on an operator's authenticated behalf.
func stageRoot(dir string, f RootFiles) error {
	for _, d := range []string{"bin", "dev", "etc/ssl", "etc/gokrazy", "etc/ncpos", "proc", "sys", "tmp", "perm", "lib", "run", "mnt", "gokrazy", "user"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	links := map[string]string{
		"var":             "/perm/var",
		"etc/resolv.conf": "/tmp/resolv.conf",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	files := []struct {
		name    string
		content []byte
		mode    os.FileMode
	}{
		{"etc/hostname", []byte(f.Hostname), 0o644},
		{"etc/hosts", []byte("127.0.0.1 localhost\n::1 localhost\n"), 0o644},
		{"etc/gokrazy/mountdevices.json", []byte("[]"), 0o644},
		{"etc/ncpos/ncpos.toml", f.ConfigTOML, 0o644},
		{"etc/ncpos/build-id", []byte(f.BuildID + "\n"), 0o644},
		{"etc/ncpos/built", []byte(f.Built.UTC().Format(time.RFC3339) + "\n"), 0o644},
		{"etc/ncpos/update-keys", trustedKeysFile(f.TrustedKeys), 0o644},
		{"etc/ncpos/security-version", []byte(strconv.FormatUint(uint64(f.SecurityVersion), 10) + "\n"), 0o644},
	}
	if f.CACerts != "" {
		files = append(files, struct {
			name    string
			content []byte
			mode    os.FileMode
		}{"etc/ssl/ca-bundle.pem", []byte(f.CACerts), 0o644})
	}
	for _, fl := range files {
		if err := os.WriteFile(filepath.Join(dir, fl.name), fl.content, fl.mode); err != nil {
			return err
		}
	}
	return nil
}

// mksquashfs packs dir into a squashfs image at out. Every file is owned by
// root and stamped with mtime, so the same inputs give the same bytes;
// quick trades size for time (Options.QuickRoot).
func mksquashfs(ctx context.Context, dir, out string, mtime int64, quick bool) error {
	t := strconv.FormatInt(mtime, 10)
	level := "19"
	if quick {
		level = "3"
	}
	if err := run(ctx, nil, "mksquashfs", dir, out, "-noappend", "-quiet", "-no-progress",
		"-comp", "zstd", "-Xcompression-level", level, "-b", "256K",
		"-all-root", "-no-xattrs", "-mkfs-time", t, "-all-time", t); err != nil {
		return fmt.Errorf("root file system: %w", err)
	}
	return nil
}
