package image

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ncpos/ncpos/passwd"
)

// makePerm creates the ext4 /perm file system image at out. Inode tables and
// the journal are initialised now rather than lazily by the kernel after the
// first mount, which would otherwise write the whole table to the CF card in
// the background on first boot.
//
// It holds the box's control password as a bcrypt hash (passwd.File), the
// one file an image brings to /perm.
func makePerm(ctx context.Context, tmp, out string, size int64, uuid string, pwHash []byte) error {
	os.Remove(out)
	stage := filepath.Join(tmp, "perm")
	pwFile := filepath.Join(stage, passwd.File)
	if err := os.MkdirAll(filepath.Dir(pwFile), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(pwFile, append(pwHash, '\n'), 0o600); err != nil {
		return err
	}
	if err := run(ctx, []string{"E2FSPROGS_FAKE_TIME=1"}, "mke2fs", "-q", "-F", "-t", "ext4", "-L", "perm",
		"-U", uuid, "-E", "lazy_itable_init=0,lazy_journal_init=0,root_owner=0:0", "-d", stage,
		out, fmt.Sprintf("%dk", size/1024)); err != nil {
		return fmt.Errorf("perm file system: %w", err)
	}
	return nil
}

// FreshPerm makes, in dir, a /perm file system of size bytes for one new
// box: a random UUID and the hash of its own control password.
func FreshPerm(ctx context.Context, dir string, size int64, pwHash []byte) (string, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", err
	}
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80
	out := filepath.Join(dir, "perm.ext4")
	if err := makePerm(ctx, dir, out, size, uuidFrom(id), pwHash); err != nil {
		return "", err
	}
	return out, nil
}
