package image

import (
	"context"
	"fmt"
	"os"
)

// makePerm creates the ext4 /perm file system image at out. Inode tables and
// the journal are initialised now rather than lazily by the kernel after the
// first mount, which would otherwise write the whole table to the CF card in
// the background on first boot.
func makePerm(ctx context.Context, out string, size int64, uuid string) error {
	os.Remove(out)
	if err := run(ctx, []string{"E2FSPROGS_FAKE_TIME=1"}, "mke2fs", "-q", "-F", "-t", "ext4", "-L", "perm",
		"-U", uuid, "-E", "lazy_itable_init=0,lazy_journal_init=0,root_owner=0:0",
		out, fmt.Sprintf("%dk", size/1024)); err != nil {
		return fmt.Errorf("perm file system: %w", err)
	}
	return nil
}
