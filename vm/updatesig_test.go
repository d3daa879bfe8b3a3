package vm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/update"
)

// TestUpdateRefused offers a box builds it must not take: unsigned, signed
// by a key it does not trust, forged (the manifest altered after signing)
// and older than the one it runs, and uploads cut off mid-way (the
// connection dropped). Each is refused with a clear error before anything
// is written: /perm's files read the same before and after (read from the
// disk with the guest paused), and the boot and both root partitions hash
// the same (after a reboot, so that nothing the guest wrote is still in
// its caches). Then `ncpos update` itself is killed mid-upload, at several
// points of the root and of the kernel: the box stays on its build, with
// no test boot set and the update's bypass overrides on a short lease.
// Last, the older build is taken when a downgrade is asked for, which
// shows the refusals were the box's checks and the box is updatable
// again; a dry run before all this says what that update would do.
func TestUpdateRefused(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	a := testImage(t, "upd-a", updConfig)
	b := testImage(t, "upd-b", updConfig)
	dir := t.TempDir()
	disk := filepath.Join(dir, "box.img")
	if err := exec.Command("cp", "--sparse=always", b, disk).Run(); err != nil {
		t.Fatal(err)
	}
	_, untrusted, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"unsigned": withManifest(t, a, filepath.Join(dir, "unsigned.img"), func(s *signature.Signed, m signature.Manifest) {
			s.Key, s.Signature = "", nil
		}),
		"signed by a key the box does not trust": withManifest(t, a, filepath.Join(dir, "untrusted.img"), func(s *signature.Signed, m signature.Manifest) {
			b, err := signature.Sign(untrusted, m)
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(b, s)
		}),
		"forged": withManifest(t, a, filepath.Join(dir, "forged.img"), func(s *signature.Signed, m signature.Manifest) {
			m.Root.SHA256 = strings.Repeat("0", 64)
			s.Manifest, _ = json.Marshal(m)
		}),
	}
	want := map[string]string{
		"unsigned":                               "not signed",
		"signed by a key the box does not trust": "does not trust",
		"forged":                                 "forged",
	}
	before := partitionHashes(t, disk)
	v, _ := boot(t, disk, false, func(o *Options) { o.Snapshot = false })
	running := system(t, v).BuildID
	// A dry run says what would change and changes nothing (the hashes
	// below cover it): the older build, downgrade asked for.
	res, err := update.Run(context.Background(), updateClient(v), openImage(t, a), update.Options{
		Timeout: v.Within(time.Minute), Settle: 5 * time.Second, Downgrade: true, DryRun: true, Logf: t.Logf})
	if err != nil || len(res.Plan) < 5 || !strings.Contains(res.Plan[0], "would take it") || !planSays(res.Plan, "inactive root partition 3") ||
		!planSays(res.Plan, "leave the boot partition as it is") {
		t.Errorf("dry run: %+v, %v", res, err)
	}
	// The box has just booted: a segment not forwarding yet is one the
	// update would wait for.
	if err == nil && !res.Before["seg1"].Forwarding && !planSays(res.Plan, "wait up to") {
		t.Errorf("dry run on a box just booted, seg1 %s: the plan does not say the update would wait for it", res.Before["seg1"])
	}
	for _, l := range res.Plan {
		t.Logf("dry run: %s", l)
	}
	// /perm before the refusals, once the box has kept its
	// configuration as the last good one (two minutes live and
	// forwarding) and its page cache has gone to the disk.
	waitLastGood(t, v, 6*time.Minute)
	time.Sleep(writeback)
	permBefore := permFiles(t, v, disk)
	wrote, _, err := v.DiskWrites()
	if err != nil {
		t.Fatal(err)
	}
	offered := 0
	for name, img := range bad {
		_, err := update.Run(context.Background(), updateClient(v), openImage(t, img), update.Options{Timeout: v.Within(time.Minute), Logf: t.Logf})
		t.Logf("a build %s: %v", name, err)
		if err == nil || !strings.Contains(err.Error(), want[name]) || !strings.Contains(err.Error(), "nothing written") {
			t.Errorf("update to a build %s: %v, want a refusal saying %q", name, err, want[name])
		}
	}
	_, err = update.Run(context.Background(), updateClient(v), openImage(t, a), update.Options{Timeout: v.Within(time.Minute), Logf: t.Logf})
	t.Logf("an older build: %v", err)
	if err == nil || !strings.Contains(err.Error(), "ask for a downgrade") {
		t.Errorf("update to an older build: %v, want a refusal of the downgrade", err)
	}
	killable := withKernel(t, a, filepath.Join(dir, "kernel.img"), 2)
	offered += cutUploads(t, v, openImage(t, killable))
	time.Sleep(writeback)
	wroteAfter, _, err := v.DiskWrites()
	if err != nil {
		t.Fatal(err)
	}
	changes, journal := permChanges(permBefore, permFiles(t, v, disk))
	for _, c := range changes {
		t.Errorf("/perm after the refused updates: %s", c)
	}
	if journal != "" {
		t.Logf("the relay journal on /perm grew meanwhile (the box's own record): %s", journal)
	}
	t.Logf("/perm: %d files read the same after the refusals; the disk took %d bytes meanwhile, while %d bytes of uploads were refused", len(permBefore)-len(changes), wroteAfter-wrote, offered)
	rebooted := time.Now()
	if err := updateClient(v).Reboot(context.Background(), "vm test: flush before hashing"); err != nil {
		t.Fatal(err)
	}
	s, _ := waitReboot(t, v, rebooted, 3*time.Minute)
	if s.BuildID != running {
		t.Fatalf("after the refusals the box runs %s, want %s", s.BuildID, running)
	}
	after := partitionHashes(t, disk)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("partition %d changed: %s -> %s", p, h, after[p])
		}
	}
	if t.Failed() {
		return
	}
	// The client killed mid-upload: the root's upload (the first) and
	// the kernel's (the second, after the root was received and
	// written to the inactive partition), each early and at its end.
	up := time.Now().Add(-time.Duration(s.UptimeSeconds * float64(time.Second)))
	im := openImage(t, killable)
	root, err := im.RootSquashfs()
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := im.Kernel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name   string
		upload int
		size   int
		share  float64
	}{{"root", 1, len(root), 0.1}, {"root", 1, len(root), 0.999}, {"kernel", 2, len(kernel), 0.1}, {"kernel", 2, len(kernel), 0.999}} {
		at := int64(k.share * float64(k.size))
		out := killedUpdate(t, v, killable, k.upload, at)
		t.Logf("ncpos update killed %d bytes into the %s's upload of %d: it said:\n%s", at, k.name, k.size, out)
		checkAfterKill(t, v, running, "a", up)
	}
	// The last killed update's override is left in force: the next
	// update ends it and holds the new build to seg1 forwarding, not to
	// the links the relay's bypass cuts.
	// The same older build, with the downgrade asked for, is taken: the
	// refusals above were the box's checks, not a broken path, and the
	// box is updatable after all of them.
	res, err = update.Run(context.Background(), updateClient(v), openImage(t, a), update.Options{
		Timeout: v.Within(4 * time.Minute), Settle: 5 * time.Second, Downgrade: true, Logf: t.Logf})
	if err != nil {
		t.Fatalf("a downgrade asked for: %v", err)
	}
	if !res.Permanent || system(t, v).BuildID != res.To {
		t.Fatalf("after the downgrade: %+v", res)
	}
	if len(res.Leftovers) != 1 || res.Leftovers[0] != "seg1" || !res.Before["seg1"].Forwarding {
		t.Errorf("the update after the killed ones ended the leftover overrides of %v and held the new build to %v; want seg1's, and seg1 forwarding", res.Leftovers, res.Before)
	}
	noOverride(t, v, "after the downgrade")
	t.Logf("downgrade %s -> %s took %v", res.From, res.To, res.Duration.Round(100*time.Millisecond))
}

// cutUploads sends the signed manifest of im cut off, then whole and its
// root, and its kernel, cut off at several points (the connection dropped
// mid-upload): the box must refuse each, having written nothing. It
// returns the bytes it sent.
func cutUploads(t *testing.T, v *VM, im *image.Image) (sent int) {
	t.Helper()
	ctx := context.Background()
	manifest, err := im.Manifest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root, err := im.RootSquashfs()
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := im.Kernel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := v.Client(2 * time.Minute)
	put := func(path string, body io.Reader, n int64) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, "PUT", v.StatusURL()+"api/v1/update/"+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = n
		req.SetBasicAuth("ncpos", testPassword)
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	for _, up := range []struct {
		step string
		data []byte
	}{{"manifest?downgrade=1", manifest}, {"root", root}, {"kernel", kernel}} {
		for _, share := range []float64{0.01, 0.5, 0.999} {
			if up.step != "manifest?downgrade=1" {
				if code, said, err := put("manifest?downgrade=1", bytes.NewReader(manifest), int64(len(manifest))); err != nil || code != http.StatusOK {
					t.Fatalf("manifest: %d %s %v", code, said, err)
				}
			}
			n := int64(share * float64(len(up.data)))
			sent += int(n)
			code, said, err := put(up.step, io.MultiReader(bytes.NewReader(up.data[:n]), failingReader{}), int64(len(up.data)))
			t.Logf("%s cut off after %d of %d bytes: %d %q %v", up.step, n, len(up.data), code, strings.TrimSpace(said), err)
			if err == nil && code == http.StatusOK {
				t.Errorf("a %s cut off after %d of %d bytes was taken", up.step, n, len(up.data))
			}
		}
	}
	// After a manifest cut off, the box holds no update: a root sent
	// now is refused for want of a manifest, before any of it is read
	// (so a byte of it is enough: with all of it, the box's early
	// answer races the client's sending). The manifest is cut off with
	// its answer awaited: a connection dropped whole may close before
	// the box has read its request, and the box may then still be
	// ending the kernel upload cut off above when the root arrives.
	if code, said, err := cutOff(v, "manifest?downgrade=1", manifest[:len(manifest)/2], int64(len(manifest))); err != nil || code != http.StatusBadRequest {
		t.Errorf("a manifest cut off in half: %d %q %v, want 400", code, strings.TrimSpace(said), err)
	}
	if code, said, err := put("root", bytes.NewReader(root[:1]), 1); err != nil || code != http.StatusConflict || !strings.Contains(said, "no signed manifest") {
		t.Errorf("a root after a cut-off manifest: %d %q %v, want 409 for want of a manifest", code, strings.TrimSpace(said), err)
	}
	return sent + len(manifest)/2 + 1
}

// cutOff sends an update step whose body ends after part of the n bytes
// it announces: the request and that part are written, then the
// connection is closed for writing only, and the box's answer is read.
func cutOff(v *VM, step string, part []byte, n int64) (int, string, error) {
	host := strings.TrimSuffix(strings.TrimPrefix(v.StatusURL(), "https://"), "/")
	tr := v.Client(time.Minute).Transport.(*http.Transport)
	conn, err := tls.Dial("tcp", host, tr.TLSClientConfig)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(v.Within(time.Minute)))
	req, err := http.NewRequest("PUT", v.StatusURL()+"api/v1/update/"+step, nil)
	if err != nil {
		return 0, "", err
	}
	req.SetBasicAuth("ncpos", testPassword)
	head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Length: %d\r\n\r\n",
		req.URL.RequestURI(), host, req.Header.Get("Authorization"), n)
	if _, err := conn.Write(append([]byte(head), part...)); err != nil {
		return 0, "", err
	}
	if err := conn.CloseWrite(); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// failingReader is a connection that stalls for a second, then drops,
// still in the middle of the body. Dropped at once, QEMU's user network
// (libslirp 4.7.0) aborted QEMU on soread's assertion "buf_len != 0"
// twice in this test's runs here; the stall lets slirp hand the box what
// it holds of the connection before the host closes it.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) {
	time.Sleep(time.Second)
	return 0, errors.New("connection dropped (test)")
}

// withManifest copies the image src to dst with its build manifest
// changed by edit, which gets the signed manifest and what it says.
func withManifest(t *testing.T, src, dst string, edit func(*signature.Signed, signature.Manifest)) string {
	t.Helper()
	if err := exec.Command("cp", "--sparse=always", src, dst).Run(); err != nil {
		t.Fatal(err)
	}
	im := openImage(t, dst)
	b, err := im.Manifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var s signature.Signed
	var m signature.Manifest
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(s.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	edit(&s, m)
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), bootpart.ManifestFile)
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	copyToBoot(t, dst, f, bootpart.ManifestFile)
	return dst
}

// copyToBoot puts the file f onto the boot partition of the disk image
// disk as name, replacing what is there.
func copyToBoot(t *testing.T, disk, f, name string) {
	t.Helper()
	off := strconv.FormatInt(openImage(t, disk).Parts[partition.Boot].Offset, 10)
	cmd := exec.Command("mcopy", "-o", "-i", disk+"@@"+off, f, "::/"+name)
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcopy: %v: %s", err, out)
	}
}

// partitionHashes hashes the boot and both root partitions of a disk
// image.
func partitionHashes(t *testing.T, disk string) map[int]string {
	t.Helper()
	im := openImage(t, disk)
	f, err := os.Open(disk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]string{}
	for _, p := range []int{partition.Boot, partition.RootA, partition.RootB} {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, im.Parts[p].Offset, im.Parts[p].Size)); err != nil {
			t.Fatal(err)
		}
		out[p] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// planSays says whether a line of a dry run's plan contains s.
func planSays(plan []string, s string) bool {
	return slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, s) })
}
