package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/update"
)

// TestUpdateKernelPanicRollsBack updates a box under OVMF to a build
// whose boot panics in its kernel: the root it brings is packed with a
// compression this kernel lacks (lz4), so the kernel cannot mount it and
// panics, as a kernel without its disk's driver does. Nothing but the
// kernel's own panic=10 reboots it; systemd-boot has dropped its one-shot
// entry by then, so the box comes back on its old slot, by itself.
func TestUpdateKernelPanicRollsBack(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	a := testImage(t, "upd-a", updConfig)
	b := testImage(t, "upd-b", updConfig)
	panics := withLZ4Root(t, b, filepath.Join(t.TempDir(), "upd-panic.img"))
	v, serial := boot(t, a, true)
	before := system(t, v)
	res, err := update.Run(context.Background(), updateClient(v), openImage(t, panics), update.Options{
		Timeout: v.Within(4 * time.Minute), Settle: 5 * time.Second, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "returned to build "+before.BuildID) {
		t.Fatalf("update to a build that panics: %v, want a return to %s", err, before.BuildID)
	}
	t.Logf("fallback under OVMF from a kernel panic took %v: %v", res.Duration.Round(100*time.Millisecond), err)
	log, _ := os.ReadFile(serial)
	if !strings.Contains(string(log), "Kernel panic - not syncing: VFS: Unable to mount root fs") {
		t.Errorf("the serial console shows no kernel panic mounting the new root")
	}
	after := system(t, v)
	if after.BuildID != before.BuildID || !strings.Contains(after.Cmdline, "-02 ") {
		t.Fatalf("after the panic: build %s, cmdline %q; want %s from partition 2", after.BuildID, after.Cmdline, before.BuildID)
	}
	if s := bootPartition(t, v).Slots; s.Firmware != "uefi" || s.Running != "a" || s.Default != "a" || s.Once != "" {
		t.Errorf("slots after the panic: %+v, want a running and the default under uefi, no one-shot left", s)
	}
	noOverride(t, v, "after the panic")
}

// TestUpdateKilledInKernelWrite cuts the power (kills QEMU) while the box
// writes a new kernel to its boot partition (a card of 2 MB/s), at
// several points of that write: each time the box boots its old build and
// still reads its boot partition, and at the end the same update goes
// through.
func TestUpdateKilledInKernelWrite(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	a := testImage(t, "upd-a", updConfig)
	b := withKernel(t, testImage(t, "upd-b", updConfig), filepath.Join(t.TempDir(), "upd-b-kernel.img"), 3)
	disk := filepath.Join(t.TempDir(), "box.img")
	if err := exec.Command("cp", "--sparse=always", a, disk).Run(); err != nil {
		t.Fatal(err)
	}
	kernel, err := openImage(t, b).Kernel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Slot b's kernel file on the box holds another pattern, so that a
	// write cut short shows as a file part old, part new.
	fill := filepath.Join(t.TempDir(), "vmlinuz-b")
	if err := os.WriteFile(fill, bytes.Repeat([]byte{0xaa}, len(kernel)), 0o644); err != nil {
		t.Fatal(err)
	}
	copyToBoot(t, disk, fill, "vmlinuz-b")
	noSnapshot := func(o *Options) { o.Snapshot = false }
	v, _ := boot(t, disk, false, noSnapshot)
	before := system(t, v)
	old := bootPartition(t, v)
	torn := 0
	for _, at := range []uint64{2 << 20, 12 << 20, 22 << 20} {
		written, err := killInKernelWrite(t, v, b, at)
		t.Logf("power cut with %d bytes written to the disk since the kernel file (%d bytes) was sent: update: %v", written, len(kernel), err)
		v, _ = boot(t, disk, false, noSnapshot)
		s := system(t, v)
		bp := bootPartition(t, v)
		if s.BuildID != before.BuildID || bp.Slots.Running != "a" || bp.Slots.Default != "a" || bp.Slots.Once != "" {
			t.Fatalf("after the power cut: build %s, slots %+v; want %s on slot a", s.BuildID, bp.Slots, before.BuildID)
		}
		if bp.Files["vmlinuz-a"] != old.Files["vmlinuz-a"] || bp.Files["syslinux.cfg"] != old.Files["syslinux.cfg"] || bp.Files["slot.cfg"] != old.Files["slot.cfg"] {
			t.Fatalf("the running slot's files changed: %v, were %v", bp.Files, old.Files)
		}
		state := "torn (part old, part new)"
		switch bp.Files["vmlinuz-b"] {
		case old.Files["vmlinuz-b"]:
			state = "the old one"
		case signature.BlobOf(kernel).SHA256:
			state = "the new one"
		default:
			torn++
		}
		t.Logf("after the power cut: build %s on slot a; slot b's kernel file is %s", s.BuildID, state)
	}
	if torn == 0 {
		t.Errorf("no power cut landed in the kernel write: slot b's kernel file was never left torn")
	}
	res, err := update.Run(context.Background(), updateClient(v), openImage(t, b), update.Options{
		Timeout: v.Within(4 * time.Minute), Settle: 5 * time.Second, Logf: t.Logf})
	if err != nil || !res.Permanent {
		t.Fatalf("the update after the power cuts: %+v, %v", res, err)
	}
	if bp := bootPartition(t, v); bp.Slots.Running != "b" || bp.Slots.Default != "b" || bp.Files["vmlinuz-b"] != signature.BlobOf(kernel).SHA256 {
		t.Errorf("after the update: slots %+v, slot b's kernel %s; want b with %s", bp.Slots, bp.Files["vmlinuz-b"], signature.BlobOf(kernel).SHA256)
	}
}

// killInKernelWrite updates v to the image img and kills QEMU once the
// kernel is sent and the disk has taken at bytes more since: the box is
// then writing it to its boot partition. It returns how many bytes the
// disk took before the kill, and the update's error.
func killInKernelWrite(t *testing.T, v *VM, img string, at uint64) (uint64, error) {
	t.Helper()
	c := updateClient(v)
	sent := make(chan struct{})
	var once sync.Once
	base := c.HTTP.Transport
	c.HTTP.Transport = roundTripper(func(req *http.Request) (*http.Response, error) {
		if strings.HasSuffix(req.URL.Path, "/api/v1/update/kernel") && req.Body != nil {
			req.Body = &sentNotifier{ReadCloser: req.Body, left: req.ContentLength, sent: func() { once.Do(func() { close(sent) }) }}
		}
		return base.RoundTrip(req)
	})
	done := make(chan error, 1)
	go func() {
		_, err := update.Run(context.Background(), c, openImage(t, img), update.Options{Timeout: v.Within(time.Minute), Logf: t.Logf})
		done <- err
	}()
	select {
	case <-sent:
	case err := <-done:
		t.Fatalf("the update ended before its kernel was sent: %v", err)
	case <-time.After(10 * time.Minute):
		t.Fatal("the kernel was not sent within 10 minutes")
	}
	// A slow card (2 MB/s), so that the cut lands at its point of the
	// write rather than after it.
	if err := v.ThrottleDiskWrites(2e6); err != nil {
		t.Fatal(err)
	}
	start, _, err := v.DiskWrites()
	if err != nil {
		t.Fatal(err)
	}
	var written uint64
	for deadline := time.Now().Add(v.Within(3 * time.Minute)); ; time.Sleep(20 * time.Millisecond) {
		n, _, err := v.DiskWrites()
		if err != nil {
			t.Fatal(err)
		}
		if written = n - start; written >= at {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the disk took %d bytes in 3 minutes after the kernel was sent", written)
		}
	}
	v.Kill()
	select {
	case err := <-done:
		return written, err
	case <-time.After(2 * time.Minute):
		t.Fatal("the update did not end within 2 minutes of the power cut")
	}
	return written, nil
}

// withLZ4Root copies the image src to dst with its root repacked with lz4
// (which the kernel cannot read) and its manifest signed again.
func withLZ4Root(t *testing.T, src, dst string) string {
	t.Helper()
	im := openImage(t, src)
	dir := t.TempDir()
	tree, packed := filepath.Join(dir, "root"), filepath.Join(dir, "root.lz4")
	off := strconv.FormatInt(im.Parts[partition.RootA].Offset, 10)
	for _, args := range [][]string{
		{"unsquashfs", "-q", "-o", off, "-d", tree, src},
		{"mksquashfs", tree, packed, "-noappend", "-quiet", "-no-progress", "-comp", "lz4", "-all-root"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", args[0], err, out)
		}
	}
	root, err := os.ReadFile(packed)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(root)) > im.Parts[partition.RootA].Size {
		t.Fatalf("the lz4 root of %d bytes does not fit the root partition", len(root))
	}
	withManifest(t, src, dst, func(s *signature.Signed, m signature.Manifest) {})
	f, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(root, im.Parts[partition.RootA].Offset); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sent, err := openImage(t, dst).RootSquashfs()
	if err != nil {
		t.Fatal(err)
	}
	return withManifest(t, dst, dst+".signed", func(s *signature.Signed, m signature.Manifest) {
		m.Root = signature.BlobOf(sent)
		resign(t, s, m)
	})
}

// roundTripper is an http.RoundTripper from a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// sentNotifier calls sent once its body has been read to the end.
type sentNotifier struct {
	io.ReadCloser
	left int64
	sent func()
}

func (e *sentNotifier) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if e.left -= int64(n); e.left <= 0 || err == io.EOF {
		e.sent()
	}
	return n, err
}

// resign signs m with the tests' key into s.
func resign(t *testing.T, s *signature.Signed, m signature.Manifest) {
	t.Helper()
	b, err := signature.Sign(testSigningKey, m)
	if err == nil {
		err = json.Unmarshal(b, s)
	}
	if err != nil {
		t.Fatal(err)
	}
}
