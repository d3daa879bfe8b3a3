// Package install writes an ncpos image onto a USB stick, CompactFlash card
// or DOM from the host (`ncpos install`).
//
// Writing a whole disk is the most destructive thing the host tool does, so
// most of this package is about refusing: the disk the running system is on,
// a disk with anything mounted or in use (directly, through a device-mapper
// or md holder, or as swap), a disk smaller than the image, a partition
// instead of a whole disk, and anything that is not a block device unless
// the caller explicitly allows a plain file. The checks read /sys and /proc
// under a root directory so they can be tested against a fake tree; the
// kernel's exclusive open (O_EXCL) is the last line of defence.
//
// A target that already runs ncpos keeps its /perm (configuration and
// records) when the new image puts /perm at exactly the same place: that
// range is simply not written. Everything written is read back and compared
// by SHA-256, because CF cards and cheap USB sticks fail silently.
package install
