package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefuseNotBlockDevice: a regular file, a character device and a
// directory are refused without -file; with -file a file (new or existing)
// gets the image, verified.
func TestRefuseNotBlockDevice(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	img, l := makeImage(t, dir, 40, 1)
	plain := filepath.Join(dir, "plain.img")
	if err := os.WriteFile(plain, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, want string }{
		{plain, "it is a regular file, not a block device (pass -file to write into a file)"},
		{"/dev/null", "it is not a block device"},
		{dir, "it is a directory, not a block device"},
	} {
		_, err := Install(context.Background(), Options{Image: img, Target: c.target, Yes: true})
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.target) {
			t.Errorf("%s: got %v, want a refusal naming it and saying %q", c.target, err, c.want)
		}
	}
	if b, _ := os.ReadFile(plain); string(b) != "precious" {
		t.Fatalf("refused file was changed: %q", b)
	}

	// -file: an existing file and one that does not exist yet.
	for _, target := range []string{plain, filepath.Join(dir, "new.img")} {
		res, err := Install(context.Background(), Options{Image: img, Target: target, AllowFile: true, Yes: true})
		if err != nil {
			t.Fatalf("-file %s: %v", target, err)
		}
		if res.Written != l.size || res.Verified != l.size {
			t.Errorf("-file %s: wrote %d verified %d, want %d", target, res.Written, res.Verified, l.size)
		}
		if sumRange(t, target, 0, l.size) != sumRange(t, img, 0, l.size) {
			t.Errorf("-file %s: content differs from the image", target)
		}
	}
}

// TestRefuseNonImage: a file without the ncpos partition layout is never
// written anywhere.
func TestRefuseNonImage(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "bogus.iso")
	os.WriteFile(bogus, bytes.Repeat([]byte{0x55, 0xAA}, 4096), 0o644)
	target := filepath.Join(dir, "target")
	_, err := Install(context.Background(), Options{Image: bogus, Target: target, AllowFile: true, Yes: true})
	if err == nil || !strings.Contains(err.Error(), "not an ncpos disk image") {
		t.Fatalf("got %v, want 'not an ncpos disk image'", err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("target was created for a bogus image")
	}
}

// TestConfirm: without -yes the user is asked once; no terminal, no Confirm
// function, or an answer other than yes write nothing.
func TestConfirm(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	img, l := makeImage(t, dir, 40, 1)
	target := filepath.Join(dir, "target.img")
	os.WriteFile(target, []byte("untouched"), 0o644)

	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var out bytes.Buffer
	for _, c := range []struct {
		name    string
		confirm func(context.Context, string) (bool, error)
		want    string
		is      error
	}{
		{"no terminal", TerminalConfirm(devnull, &out), "standard input is not a terminal", errNoTerminal},
		{"no Confirm", nil, "standard input is not a terminal", errNoTerminal},
		{"answered no", func(context.Context, string) (bool, error) { return false, nil }, "not confirmed", nil},
	} {
		_, err := Install(context.Background(), Options{Image: img, Target: target, AllowFile: true, Confirm: c.confirm})
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%s: got %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "untouched" {
		t.Fatalf("target changed without confirmation")
	}

	asked := 0
	var prompt string
	res, err := Install(context.Background(), Options{Image: img, Target: target, AllowFile: true, Out: &out,
		Confirm: func(_ context.Context, p string) (bool, error) { asked++; prompt = p; return true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if asked != 1 || !strings.HasPrefix(prompt, "Type yes to write ncpos-40M-1.img to "+target+" (regular file)") {
		t.Errorf("asked %d times, prompt %q", asked, prompt)
	}
	if res.Verified != l.size {
		t.Errorf("verified %d bytes, want %d", res.Verified, l.size)
	}
}

// TestVerifyMismatch corrupts the target between the write and the
// read-back: the install fails, says where, and calls the target not
// reliably bootable.
func TestVerifyMismatch(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	img, _ := makeImage(t, dir, 40, 1)
	target := filepath.Join(dir, "card.img")
	_, err := Install(context.Background(), Options{Image: img, Target: target, AllowFile: true, Yes: true,
		Progress: func(phase string, done, total int64) {
			if phase == "writing" && done == total { // the partition table, written last
				f, err := os.OpenFile(target, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteAt([]byte("bit rot"), 2<<20+100)
				f.Close()
			}
		}})
	var we *WriteError
	if !errors.As(err, &we) || !we.Mismatch || !errors.Is(err, errNotBootable) {
		t.Fatalf("got %v, want a verification mismatch", err)
	}
	for _, want := range []string{"first difference in the MiB at offset 2097152", target + " is NOT reliably bootable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// With Perm, a target whose /perm is not kept gets the /perm it makes in
// place of the image's, and everything else from the image, verified; a
// target whose /perm is kept is written without calling it.
func TestFreshPerm(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	img, l := makeImage(t, dir, 40, 1)
	target := filepath.Join(dir, "card.img")
	var asked int64
	fresh := bytes.Repeat([]byte("fresh perm "), int(l.permLen/11)+1)[:l.permLen]
	perm := func(size int64) (io.ReaderAt, error) {
		asked = size
		return bytes.NewReader(fresh), nil
	}
	res, err := Install(context.Background(), Options{Image: img, Target: target, AllowFile: true, Yes: true, Perm: perm})
	if err != nil {
		t.Fatal(err)
	}
	if !res.FreshPerm || asked != l.permLen || res.Written != l.size {
		t.Fatalf("fresh %v, asked for %d bytes (perm is %d), wrote %d", res.FreshPerm, asked, l.permLen, res.Written)
	}
	if sumRange(t, target, 0, l.permOff) != sumRange(t, img, 0, l.permOff) {
		t.Error("the image before /perm was not written as it is")
	}
	got, _ := os.ReadFile(target)
	if !bytes.Equal(got[l.permOff:l.permOff+l.permLen], fresh) {
		t.Error("the target's /perm is not the one Perm made")
	}

	// The fresh /perm is no ext4, so make the target's a real one again
	// and install over it: kept, Perm not asked.
	run(t, "mke2fs", "-q", "-F", "-t", "ext4", "-L", "perm", "-E", fmt.Sprintf("offset=%d", l.permOff),
		target, fmt.Sprintf("%dk", l.permLen/1024))
	asked = 0
	res, err = Install(context.Background(), Options{Image: img, Target: target, AllowFile: true, Yes: true, Perm: perm})
	if err != nil {
		t.Fatal(err)
	}
	if !res.KeptPerm || res.FreshPerm || asked != 0 {
		t.Errorf("over an installation: kept %v fresh %v asked %d", res.KeptPerm, res.FreshPerm, asked)
	}
}

func TestOverlay(t *testing.T) {
	base := bytes.Repeat([]byte{'b'}, 100)
	top := bytes.Repeat([]byte{'t'}, 30)
	o := overlay{base: bytes.NewReader(base), off: 40, size: 30, top: bytes.NewReader(top)}
	b := make([]byte, 100)
	if n, err := o.ReadAt(b, 0); n != 100 || err != nil {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	want := strings.Repeat("b", 40) + strings.Repeat("t", 30) + strings.Repeat("b", 30)
	if string(b) != want {
		t.Fatalf("read %q", b)
	}
	b = make([]byte, 20)
	o.ReadAt(b, 35)
	if string(b) != "bbbbb"+strings.Repeat("t", 15) {
		t.Fatalf("read across the start %q", b)
	}
}
