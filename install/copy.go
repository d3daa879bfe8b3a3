package install

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
)

const (
	// chunkSize is the unit of writing, hashing and progress.
	chunkSize = 1 << 20
	// syncEvery bounds how much written data may sit in the page cache: the
	// progress bar then shows what reached the card rather than what
	// reached RAM, and an interrupt does not wait for a huge final flush.
	syncEvery = 32 << 20
)

// extent is a byte range of the image (and of the target: the image is
// written at the same offsets).
type extent struct{ Off, Len int64 }

// writeExtents lists what to write for an image of size bytes: everything
// but a kept /perm, and the partition table (the first sector) last. With
// the table last, the new table only appears once everything it points at
// is on the disk; when /perm is kept, an interrupted write leaves the old
// table (with the same partition 4) in place, so a rerun still keeps /perm.
func writeExtents(size int64, plan permPlan) []extent {
	var ex []extent
	add := func(from, to int64) {
		if to > from {
			ex = append(ex, extent{from, to - from})
		}
	}
	if plan.Keep {
		add(sectorSize, plan.Offset)
		add(plan.Offset+plan.Size, size)
	} else {
		add(sectorSize, size)
	}
	add(0, sectorSize)
	return ex
}

func total(ex []extent) int64 {
	var n int64
	for _, e := range ex {
		n += e.Len
	}
	return n
}

// digest is the SHA-256 of one pass over the extents, in their order, plus
// one per chunk so a mismatch can be located.
type digest struct {
	Sum    [sha256.Size]byte
	Chunks [][sha256.Size]byte
	Offs   []int64
	Bytes  int64
}

// walk visits the extents in chunks aligned to chunkSize (so writes to a
// block device cover whole pages), calling fill to move each chunk into buf
// and hashing what it holds afterwards. It stops before the next chunk when
// ctx is done; report gets the running byte count after each chunk.
func walk(ctx context.Context, ex []extent, fill func(off int64, buf []byte) error, report func(done int64)) (digest, error) {
	var d digest
	h := sha256.New()
	buf := make([]byte, chunkSize)
	for _, e := range ex {
		for off, end := e.Off, e.Off+e.Len; off < end; {
			if err := ctx.Err(); err != nil {
				return d, err
			}
			n := min(off-off%chunkSize+chunkSize, end) - off
			b := buf[:n]
			if err := fill(off, b); err != nil {
				return d, err
			}
			h.Write(b)
			d.Chunks = append(d.Chunks, sha256.Sum256(b))
			d.Offs = append(d.Offs, off)
			d.Bytes += n
			off += n
			if report != nil {
				report(d.Bytes)
			}
		}
	}
	copy(d.Sum[:], h.Sum(nil))
	return d, nil
}

// clearTable zeroes the first sector (boot code and partition table) and
// flushes it to the medium.
func clearTable(f *os.File) error {
	if _, err := f.WriteAt(make([]byte, sectorSize), 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("flushing to %s: %w", f.Name(), err)
	}
	return nil
}

// copyImage writes the extents of src to dst, syncing every syncEvery bytes
// and at the end. The digest is of what was written.
func copyImage(ctx context.Context, dst *os.File, src io.ReaderAt, ex []extent, report func(int64)) (digest, error) {
	var unsynced int64
	d, err := walk(ctx, ex, func(off int64, b []byte) error {
		if _, err := src.ReadAt(b, off); err != nil {
			return fmt.Errorf("reading the image at %d: %w", off, err)
		}
		if _, err := dst.WriteAt(b, off); err != nil {
			return err // *PathError names the device and offset is in the progress
		}
		if unsynced += int64(len(b)); unsynced >= syncEvery {
			unsynced = 0
			if err := dst.Sync(); err != nil {
				return fmt.Errorf("flushing to %s: %w", dst.Name(), err)
			}
		}
		return nil
	}, report)
	if err != nil {
		return d, err
	}
	if err := dst.Sync(); err != nil {
		return d, fmt.Errorf("flushing to %s: %w", dst.Name(), err)
	}
	return d, nil
}

// readBack reads the same extents from the target and hashes them.
func readBack(ctx context.Context, r io.ReaderAt, ex []extent, report func(int64)) (digest, error) {
	return walk(ctx, ex, func(off int64, b []byte) error {
		if _, err := r.ReadAt(b, off); err != nil {
			return fmt.Errorf("reading back at %d: %w", off, err)
		}
		return nil
	}, report)
}

// firstMismatch returns the offset of the first chunk that differs.
func firstMismatch(want, got digest) int64 {
	for i := range want.Chunks {
		if i >= len(got.Chunks) || want.Chunks[i] != got.Chunks[i] {
			return want.Offs[i]
		}
	}
	return -1
}

// overlay reads base, except for [off, off+size), which it reads from top
// (at top's offset 0): the image with another /perm in its place.
type overlay struct {
	base      io.ReaderAt
	off, size int64
	top       io.ReaderAt
}

func (o overlay) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		at := off + int64(n)
		var src io.ReaderAt
		var srcOff, limit int64
		switch {
		case at < o.off:
			src, srcOff, limit = o.base, at, o.off-at
		case at < o.off+o.size:
			src, srcOff, limit = o.top, at-o.off, o.off+o.size-at
		default:
			src, srcOff, limit = o.base, at, int64(len(b)-n)
		}
		chunk := b[n:]
		if int64(len(chunk)) > limit {
			chunk = chunk[:limit]
		}
		m, err := src.ReadAt(chunk, srcOff)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
