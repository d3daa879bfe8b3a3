package vm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	evlog "github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/partition"
)

// permFile is one entry of /perm as the disk holds it.
type permFile struct {
	Mode fs.FileMode
	Sum  string // SHA-256 of a file's content, a link's target
	Data []byte // a file's content
}

// permFiles reads the files of /perm from the disk image of the running
// VM v: the guest is paused while its partition is copied (QEMU drains
// its disk requests first), the copy's journal is replayed as a mount
// would (e2fsck), and debugfs dumps its tree. The guest runs on after.
func permFiles(t *testing.T, v *VM, disk string) map[string]permFile {
	t.Helper()
	p := openImage(t, disk).Parts[partition.Perm]
	dir := t.TempDir()
	img, tree := filepath.Join(dir, "perm.img"), filepath.Join(dir, "tree")
	if _, err := v.Query("stop", nil); err != nil {
		t.Fatal(err)
	}
	err := copySparse(disk, img, p.Offset, p.Size)
	if _, e := v.Query("cont", nil); e != nil && err == nil {
		err = e
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"e2fsck", "-y", "-E", "journal_only", img},
		{"debugfs", "-R", "rdump / " + tree, img},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", args[0], err, out)
		}
	}
	files := map[string]permFile{}
	err = filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == tree {
			return err
		}
		rel, _ := filepath.Rel(tree, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		f := permFile{Mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			f.Data, err = os.ReadFile(path)
		case fi.Mode()&fs.ModeSymlink != 0:
			var target string
			target, err = os.Readlink(path)
			f.Data = []byte(target)
		}
		sum := sha256.Sum256(f.Data)
		f.Sum = hex.EncodeToString(sum[:])
		files[rel] = f
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// copySparse copies size bytes at off of src into a new file dst, leaving
// holes where src reads zero.
func copySparse(src, dst string, off, size int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	r := io.NewSectionReader(in, off, size)
	buf, zero := make([]byte, 1<<16), make([]byte, 1<<16)
	var at int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, err := out.WriteAt(buf[:n], at); err != nil {
				return err
			}
		}
		at += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := out.Truncate(size); err != nil {
		return err
	}
	return out.Close()
}

// permJournal is the relay journal bypassd keeps on /perm: it records
// what the relays do, which the box's load alone may change (a forwarder
// late under load is put into bypass), so between two readings it may
// grow, but never change.
const permJournal = "ncpos/bypass.log"

// permChanges lists how /perm's files differ from before to after: a file
// added, removed or changed, the relay journal changed other than by
// growing. It also returns what the journal grew by.
func permChanges(before, after map[string]permFile) (changes []string, journal string) {
	names := map[string]bool{}
	for n := range before {
		names[n] = true
	}
	for n := range after {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		b, hadB := before[n]
		a, hasA := after[n]
		switch {
		case !hadB:
			changes = append(changes, fmt.Sprintf("%s added (%v, %d bytes)", n, a.Mode, len(a.Data)))
		case !hasA:
			changes = append(changes, fmt.Sprintf("%s removed", n))
		case a.Mode != b.Mode:
			changes = append(changes, fmt.Sprintf("%s: mode %v -> %v", n, b.Mode, a.Mode))
		case a.Sum == b.Sum:
		case n == permJournal && bytes.HasPrefix(a.Data, b.Data):
			journal = string(a.Data[len(b.Data):])
		default:
			changes = append(changes, fmt.Sprintf("%s changed (%d -> %d bytes, SHA-256 %s -> %s)", n, len(b.Data), len(a.Data), b.Sum[:12], a.Sum[:12]))
		}
	}
	return changes, strings.TrimSpace(journal)
}

func TestPermChanges(t *testing.T) {
	f := func(mode fs.FileMode, data string) permFile {
		sum := sha256.Sum256([]byte(data))
		return permFile{Mode: mode, Data: []byte(data), Sum: hex.EncodeToString(sum[:])}
	}
	before := map[string]permFile{
		"machine-id":    f(0o644, "abc"),
		permJournal:     f(0o644, "line 1\n"),
		"ncpos/tls/key": f(0o600, "key"),
	}
	same := map[string]permFile{"machine-id": f(0o644, "abc"), permJournal: f(0o644, "line 1\n"), "ncpos/tls/key": f(0o600, "key")}
	if c, j := permChanges(before, same); c != nil || j != "" {
		t.Errorf("no change: %q, journal %q", c, j)
	}
	after := map[string]permFile{
		"machine-id":         f(0o644, "abd"),
		permJournal:          f(0o644, "line 1\nline 2\n"),
		"ncpos/tls/key":      f(0o644, "key"),
		"ncpos/update/stage": f(0o644, "root"),
	}
	c, j := permChanges(before, after)
	want := []string{
		"machine-id changed (3 -> 3 bytes",
		"ncpos/tls/key: mode -rw------- -> -rw-r--r--",
		"ncpos/update/stage added",
	}
	if len(c) != len(want) || j != "line 2" {
		t.Fatalf("changes %q, journal %q; want %q and the journal's line 2", c, j, want)
	}
	for i := range want {
		if !strings.HasPrefix(c[i], want[i]) {
			t.Errorf("change %d: %q, want %q", i, c[i], want[i])
		}
	}
	rewritten := map[string]permFile{"machine-id": f(0o644, "abc"), permJournal: f(0o644, "other\n"), "ncpos/tls/key": f(0o600, "key")}
	if c, _ := permChanges(before, rewritten); len(c) != 1 || !strings.HasPrefix(c[0], permJournal+" changed") {
		t.Errorf("a journal rewritten, not grown: %q", c)
	}
	delete(rewritten, "machine-id")
	if c, _ := permChanges(before, rewritten); len(c) != 2 || c[0] != "machine-id removed" {
		t.Errorf("a file removed: %q", c)
	}
}

// writeback is how long a guest's page cache may hold a write before it
// goes to the disk: the kernel's dirty_expire (30 s) and a flusher
// period (5 s) after it, with a margin.
const writeback = 40 * time.Second

// waitLastGood waits until the box has kept its configuration as the last
// good one (once it has been live and forwarding for two minutes), a
// write to /perm of its own that would otherwise land in what a test
// compares.
func waitLastGood(t *testing.T, v *VM, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(v.Within(within)); ; time.Sleep(5 * time.Second) {
		var got struct{ Events []evlog.Event }
		getAPI(t, v, "api/v1/events?limit=500", &got)
		for _, e := range got.Events {
			if e.Kind == evlog.KindConfig && e.Fields["action"] == "keep_last_good" {
				t.Logf("the box kept its configuration as the last good one at %v: %s", e.Time.Format(time.TimeOnly), e.Message)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the box did not keep its configuration as the last good one within %v", within)
		}
	}
}
