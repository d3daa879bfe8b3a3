package install

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sys/unix"
)

// Options says what to write where.
type Options struct {
	Image     string // ncpos disk image (ncpos build's output)
	Target    string // whole-disk block device, e.g. /dev/sdb
	AllowFile bool   // also accept a regular file as Target (created if missing)
	WipePerm  bool   // write /perm too, erasing the target's configuration and records
	Yes       bool   // do not ask
	// Confirm asks the user; TerminalConfirm is the usual one. Without it
	// and without Yes, Install refuses.
	Confirm func(ctx context.Context, prompt string) (bool, error)
	// Out gets the description of what is about to happen and, with
	// ProgressBar, the progress bar. nil discards.
	Out         io.Writer
	ProgressBar bool
	// Progress, if set, is called after every chunk with phase "writing" or
	// "verifying" (tests use it to interrupt a write half-way).
	Progress func(phase string, done, total int64)
	// Root is where /sys, /proc and /dev are; "" is "/".
	Root string
	// Perm, when set, makes the /perm file system (of the given size) to
	// write in place of the image's when the target's /perm is not kept:
	// the host gives each new box a control password of its own. A kept
	// /perm keeps its password.
	Perm func(size int64) (io.ReaderAt, error)
}

// Result describes a finished, verified install.
type Result struct {
	Image, Target string
	ImageSize     int64
	Written       int64  // bytes written (the image minus a kept /perm)
	Verified      int64  // bytes read back and found equal
	SHA256        string // of the written bytes, in write order
	KeptPerm      bool
	FreshPerm     bool // /perm came from Options.Perm, not the image
	PermNote      string
	WriteTime     time.Duration // including the final fsync
	VerifyTime    time.Duration
	Duration      time.Duration // the whole install, without the question
	Notes         []string
}

// String is the summary `ncpos install` prints.
func (r *Result) String() string {
	var b strings.Builder
	rate := float64(r.Written) / 1e6 / max(r.WriteTime.Seconds(), 1e-9)
	fmt.Fprintf(&b, "installed %s onto %s in %v\n", r.Image, r.Target, r.Duration.Round(time.Millisecond))
	fmt.Fprintf(&b, "  wrote %d bytes (%s) in %v, %.1f MB/s\n", r.Written, human(r.Written), r.WriteTime.Round(time.Millisecond), rate)
	fmt.Fprintf(&b, "  verified %d bytes by reading back in %v: sha256 %s\n", r.Verified, r.VerifyTime.Round(time.Millisecond), r.SHA256)
	fmt.Fprintf(&b, "  /perm: %s\n", r.PermNote)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

// errNotBootable is wrapped by every error after writing has started: the
// target then holds a partial or unverified image.
var errNotBootable = errors.New("the target is not bootable")

// WriteError is a write or verification that did not complete. Its message
// says plainly that the target is not bootable and what to do.
type WriteError struct {
	Target      string
	Phase       string // "writing" or "verifying"
	Done, Total int64
	PermKept    bool // the kept /perm range was never written
	Mismatch    bool // the read-back differed
	Err         error
}

func (e *WriteError) Unwrap() []error { return []error{errNotBootable, e.Err} }

func (e *WriteError) Error() string {
	how := "failed"
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		how = "was interrupted"
	}
	msg := fmt.Sprintf("%s %s %s after %s of %s: %v\n", e.Phase, e.Target, how, mib(e.Done), mib(e.Total), e.Err)
	perm := "; what was on it before is partly overwritten"
	if e.PermKept {
		perm = "; its /perm was not touched and will be kept"
	}
	switch {
	case e.Mismatch:
		return msg + fmt.Sprintf("%s is NOT reliably bootable: what was read back differs from what was written, "+
			"so the card or its reader may be failing. Run ncpos install onto it again; if that fails too, use another card", e.Target)
	case e.Phase == "verifying":
		return msg + fmt.Sprintf("%s holds an unverified image: treat it as NOT bootable and run ncpos install onto it again", e.Target)
	}
	return msg + fmt.Sprintf("%s is NOT bootable now: the image is only partly written%s. "+
		"Run ncpos install onto it again and let it finish before putting it into an appliance", e.Target, perm)
}

// Install checks the target, asks (unless Yes), writes the image, reads it
// back and compares, and has the kernel re-read the partition table. Any
// refusal is a *RefusedError and leaves the target untouched; once writing
// has started, failures are *WriteError, which wraps ErrNotBootable.
func Install(ctx context.Context, o Options) (*Result, error) {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	h := newHost(o.Root)

	img, tab, size, err := openImage(o.Image)
	if err != nil {
		return nil, err
	}
	defer img.Close()

	t, err := h.check(o.Target, o.AllowFile, size)
	if err != nil {
		return nil, err
	}
	f, err := openTarget(t, size)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	plan, err := planPerm(tab, f, t.Path, o.WipePerm)
	if err != nil {
		return nil, err
	}

	fmt.Fprintf(out, "image   %s: %s (%d bytes)\n", o.Image, human(size), size)
	fmt.Fprintf(out, "target  %s: %s\n", t.Path, t.Describe())
	fmt.Fprintf(out, "/perm   %s\n", plan.Note)
	if !o.Yes {
		if o.Confirm == nil {
			return nil, &RefusedError{Target: t.Path, Reasons: []string{errNoTerminal.Error()}, Err: errNoTerminal}
		}
		lost := "everything on it will be overwritten"
		if plan.Keep {
			lost = "everything on it except /perm will be overwritten"
		}
		ok, err := o.Confirm(ctx, fmt.Sprintf("Type yes to write %s to %s (%s); %s: ",
			filepath.Base(o.Image), t.Path, t.Describe(), lost))
		if errors.Is(err, errNoTerminal) {
			return nil, &RefusedError{Target: t.Path, Reasons: []string{err.Error()}, Err: err}
		}
		if err != nil {
			return nil, &RefusedError{Target: t.Path, Reasons: []string{fmt.Sprintf("not confirmed: %v", err)}, Err: err}
		}
		if !ok {
			return nil, &RefusedError{Target: t.Path, Reasons: []string{"not confirmed (the answer was not yes)"}}
		}
	}

	var src io.ReaderAt = img
	fresh := false
	if !plan.Keep && o.Perm != nil {
		np := tab.perm()
		p, err := o.Perm(np.Size())
		if err != nil {
			return nil, fmt.Errorf("making the new /perm: %w", err)
		}
		src, fresh = overlay{base: img, off: np.Offset(), size: np.Size(), top: p}, true
	}

	start := time.Now()
	ex := writeExtents(size, plan)
	n := total(ex)
	res := &Result{Image: o.Image, Target: t.Path, ImageSize: size, KeptPerm: plan.Keep, FreshPerm: fresh, PermNote: plan.Note}
	werr := func(phase string, done int64, err error) error {
		return &WriteError{Target: t.Path, Phase: phase, Done: done, Total: n, PermKept: plan.Keep, Err: err}
	}

	if !plan.Keep {
		// Nothing on the target is kept, so first remove its partition
		// table: an interrupted write then leaves a disk without one, which
		// a rerun can never mistake for an ncpos installation whose /perm
		// (perhaps half overwritten by now) is worth keeping.
		if err := clearTable(f); err != nil {
			return nil, werr("writing", 0, err)
		}
	}
	bar, report := o.progress(out, "writing "+t.Path, "writing", n)
	wd, err := copyImage(ctx, f, src, ex, report)
	bar.finish(err)
	if err != nil {
		return nil, werr("writing", wd.Bytes, err)
	}
	res.Written, res.WriteTime = wd.Bytes, time.Since(start)

	vstart := time.Now()
	dropCache(f, !t.File)
	bar, report = o.progress(out, "verifying "+t.Path, "verifying", n)
	vd, err := readBack(ctx, f, ex, report)
	bar.finish(err)
	if err != nil {
		return nil, werr("verifying", vd.Bytes, err)
	}
	if vd.Sum != wd.Sum {
		off := firstMismatch(wd, vd)
		e := werr("verifying", vd.Bytes, fmt.Errorf("sha256 %x read back, %x written; first difference in the MiB at offset %d",
			vd.Sum, wd.Sum, off)).(*WriteError)
		e.Mismatch = true
		return nil, e
	}
	res.Verified, res.VerifyTime = vd.Bytes, time.Since(vstart)
	res.SHA256 = hex.EncodeToString(wd.Sum[:])

	if !t.File {
		if note := reread(f, t); note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	if err := f.Close(); err != nil {
		return nil, werr("writing", wd.Bytes, err)
	}
	res.Duration = time.Since(start)
	return res, nil
}

// openImage opens the image and checks that it is an ncpos disk image, so
// that a wrong file (a tarball, an ISO) is never written onto a card.
func openImage(path string) (*os.File, *mbr, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("image: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, fmt.Errorf("image: %w", err)
	}
	bad := func(why string) error {
		f.Close()
		return fmt.Errorf("image %s is not an ncpos disk image: %s", path, why)
	}
	device := st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0
	if !st.Mode().IsRegular() && !device {
		return nil, nil, 0, bad("neither a regular file nor a disk")
	}
	size := st.Size()
	if device {
		// The running appliance's own disk (install to internal disk): the
		// image is what the partition table spans.
		size = 0
		if tab, ok, err := readMBR(f); err == nil && ok && tab.ncposLayout() == nil {
			size = tab.perm().End()
		}
	}
	if size == 0 || size%sectorSize != 0 {
		return nil, nil, 0, bad(fmt.Sprintf("its size %d is not a whole number of sectors", size))
	}
	tab, ok, err := readMBR(f)
	if err != nil {
		f.Close()
		return nil, nil, 0, fmt.Errorf("image %s: %w", path, err)
	}
	if !ok {
		return nil, nil, 0, bad("no MBR partition table")
	}
	if err := tab.ncposLayout(); err != nil {
		return nil, nil, 0, bad(err.Error())
	}
	if end := tab.perm().End(); end > size {
		return nil, nil, 0, bad(fmt.Sprintf("partition 4 ends at %d, beyond the file's %d bytes", end, size))
	}
	return f, tab, size, nil
}

// openTarget opens a checked target for writing. A block device is opened
// with O_EXCL, which the kernel refuses while anything has it mounted or
// claimed, closing the gap between the checks and the write; the device
// number and size are checked again on the open file.
func openTarget(t *Target, size int64) (*os.File, error) {
	if t.File {
		f, err := os.OpenFile(t.Path, os.O_RDWR|os.O_CREATE, 0o644) // -file may name a new file
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		return f, nil
	}
	f, err := os.OpenFile(t.Path, os.O_RDWR|unix.O_EXCL, 0)
	if errors.Is(err, unix.EBUSY) {
		return nil, refuse(t.Path, "the kernel refuses exclusive access (device busy): something has it mounted or open")
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", t.Path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Rdev != t.Rdev {
		f.Close()
		return nil, refuse(t.Path, "it changed between checking and opening; run again")
	}
	n, err := blkSize(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("size of %s: %w", t.Path, err)
	}
	if n < size {
		f.Close()
		return nil, refuse(t.Path, fmt.Sprintf("it holds %s (%d bytes), less than the image's %s (%d bytes)",
			human(n), n, human(size), size))
	}
	return f, nil
}

// reread has the kernel re-read the partition table. It is not a failure
// when it cannot: the image is written and verified, and the table is read
// at the next plug-in or boot. A loop device without partition scanning
// answers EINVAL, which is expected.
func reread(f *os.File, t *Target) string {
	err := rereadPartitions(f)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, unix.EINVAL) && t.Disk.Transport == "loop":
		return fmt.Sprintf("%s is a loop device without partition scanning; the kernel did not re-read its partition table (expected)", t.Path)
	}
	return fmt.Sprintf("the kernel could not re-read the partition table of %s (%v); unplug and replug it before using its partitions", t.Path, err)
}

// bar wraps an optional progress bar.
type bar struct{ pb *progressbar.ProgressBar }

func (b bar) finish(err error) {
	if b.pb == nil {
		return
	}
	if err != nil {
		b.pb.Exit()
		return
	}
	b.pb.Finish()
}

// progress makes the bar (with byte counts and rate) for one phase and the
// report function that feeds it and the Progress hook.
func (o *Options) progress(out io.Writer, desc, phase string, n int64) (bar, func(int64)) {
	var b bar
	if o.ProgressBar {
		b.pb = progressbar.NewOptions64(n,
			progressbar.OptionSetWriter(out),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionFullWidth(),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(out) }),
		)
	}
	return b, func(done int64) {
		if b.pb != nil {
			b.pb.Set64(done)
		}
		if o.Progress != nil {
			o.Progress(phase, done, n)
		}
	}
}
