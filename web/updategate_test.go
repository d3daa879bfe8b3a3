package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/web/update"
)

// blockingGokrazy is gokrazy's update endpoint that holds each root
// until release is closed, as a slow card does.
func blockingGokrazy(t *testing.T) (sock string, arrived chan string, release chan struct{}) {
	t.Helper()
	arrived, release = make(chan string, 10), make(chan struct{})
	return gokrazySocket(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrived <- string(b)
		<-release
	}), arrived, release
}

// While one build's root is being written, a second root upload, a
// kernel and a test boot are refused: two uploads never hold a root in
// memory each. Another build's manifest aborts the write, and the root on
// the partition is never taken for the new build's, which would
// test-boot build B's kernel on build A's root.
func TestUpdateOneAtATime(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	sock, arrived, release := blockingGokrazy(t)
	f.srv.GokrazySocket = sock
	slots := &fakeSlots{state: bootpart.State{Firmware: "bios", Running: "a", Default: "a"},
		kernels: map[bootpart.Slot][]byte{"a": []byte("old kernel"), "b": []byte("old kernel")}}
	f.srv.Boot = slots
	auth := map[string]string{"Authorization": goodAuth}
	key := testGate(t, f, "b1", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	manifest := func(id, root, kernel string) string {
		signed, err := signature.Sign(key, signature.Manifest{BuildID: id, Built: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
			Root: signature.BlobOf([]byte(root)), Kernel: signature.BlobOf([]byte(kernel))})
		if err != nil {
			t.Fatal(err)
		}
		return string(signed)
	}
	put := func(path, body string) *httpResult { return f.do(newRequest("PUT", path, body, auth)) }

	if r := put("/api/v1/update/manifest", manifest("A", "root of build A", "kernel A")); r.Code != 200 {
		t.Fatalf("manifest A: %d %s", r.Code, r.Body)
	}
	first := make(chan *httpResult, 1)
	go func() { first <- put("/api/v1/update/root", "root of build A") }()
	select {
	case <-arrived:
	case r := <-first:
		t.Fatalf("root A ended before gokrazy took it: %d %s", r.Code, r.Body)
	case <-time.After(10 * time.Second):
		t.Fatal("root A did not reach gokrazy")
	}

	// Build A's root is being written.
	if r := put("/api/v1/update/root", "root of build A"); r.Code != 409 || !strings.Contains(r.Body, "root of build A is being received or written") {
		t.Errorf("a second root upload: %d %s, want 409 naming the root being written", r.Code, r.Body)
	}
	if r := put("/api/v1/update/kernel", "kernel A"); r.Code != 409 {
		t.Errorf("a kernel during the root: %d %s, want 409", r.Code, r.Body)
	}
	if r := f.do(newRequest("POST", "/api/v1/update/testboot", "", auth)); r.Code != 409 {
		t.Errorf("testboot during the root: %d %s, want 409", r.Code, r.Body)
	}
	// B's manifest aborts A's write and starts anew: B's root is not on
	// the partition, so B's kernel does not get a test boot.
	if r := put("/api/v1/update/manifest", manifest("B", "root of build B", "kernel B")); r.Code != 200 {
		t.Fatalf("manifest B during A's root: %d %s, want A's write aborted and B accepted", r.Code, r.Body)
	}
	if r := <-first; r.Code == 200 {
		t.Errorf("root A, aborted: %d %s", r.Code, r.Body)
	}
	close(release)
	if r := put("/api/v1/update/kernel", "kernel B"); r.Code != 200 {
		t.Fatalf("kernel B: %d %s", r.Code, r.Body)
	}
	if r := f.do(newRequest("POST", "/api/v1/update/testboot", "", auth)); r.Code != 409 || !strings.Contains(r.Body, "no verified root") {
		t.Errorf("testboot of B on A's root: %d %s, want 409", r.Code, r.Body)
	}
	if slots.state.Once != "" {
		t.Errorf("slot %s set to boot once", slots.state.Once)
	}
}

// An anti-rollback floor: a downgrade may go back to an older build of
// the same security version, never below the highest the box has made
// permanent; a test boot of a newer one raises the floor only once it is
// made permanent.
func TestUpdateSecurityFloor(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	sock, _ := fakeGokrazy(t)
	f.srv.GokrazySocket = sock
	auth := map[string]string{"Authorization": goodAuth}
	key := testGate(t, f, "b5", time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC))
	// The running build's security version, read as statusd reads it.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc/ncpos"), 0o755)
	os.WriteFile(filepath.Join(root, update.TrustedKeysFile), []byte("# none\n"), 0o644)
	os.WriteFile(filepath.Join(root, update.SecurityVersionFile), []byte("2\n"), 0o644)
	g, err := update.LoadGate(root)
	if err != nil || g.SecurityVersion != 2 || g.FloorFile != filepath.Join(root, "perm/ncpos/security-floor") {
		t.Fatalf("gate %+v, %v; want security version 2", g, err)
	}
	f.srv.Updates.SecurityVersion, f.srv.Updates.FloorFile = 2, g.FloorFile
	slots := &fakeSlots{state: bootpart.State{Firmware: "bios", Running: "a", Default: "a"},
		kernels: map[bootpart.Slot][]byte{"a": []byte("k"), "b": []byte("k")}}
	f.srv.Boot = slots
	manifest := func(id string, day, sv int) string {
		signed, err := signature.Sign(key, signature.Manifest{BuildID: id, Built: time.Date(2026, 12, day, 0, 0, 0, 0, time.UTC),
			SecurityVersion: uint32(sv), Root: signature.BlobOf([]byte("root")), Kernel: signature.BlobOf([]byte("kernel"))})
		if err != nil {
			t.Fatal(err)
		}
		return string(signed)
	}
	put := func(body, query string) *httpResult {
		return f.do(newRequest("PUT", "/api/v1/update/manifest"+query, body, auth))
	}
	for _, tc := range []struct {
		name, body, query string
		code              int
		says              string
	}{
		{"older, lower security version, downgrade asked", manifest("b3", 3, 1), "?downgrade=1", 403, "security version 1, the appliance runs nothing below 2"},
		{"the same, checked only", manifest("b3", 3, 1), "?check=1&downgrade=1", 403, "below 2"},
		{"older, same security version, downgrade asked", manifest("b4", 4, 2), "?downgrade=1", 200, "accepted"},
		{"older, same security version, no downgrade", manifest("b4", 4, 2), "", 409, "ask for a downgrade"},
		{"newer, higher", manifest("b6", 6, 3), "", 200, "accepted"},
	} {
		if r := put(tc.body, tc.query); r.Code != tc.code || !strings.Contains(r.Body, tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, r.Code, r.Body, tc.code, tc.says)
		}
	}

	// Test-booting build b6 (security version 3) from slot b: until it
	// is made permanent, the box may still go back to version 1.
	slots.state.Running, slots.state.Once = "b", ""
	f.srv.Updates.Running, f.srv.Updates.SecurityVersion = "b6", 3
	if r := put(manifest("b3", 3, 1), "?check=1&downgrade=1"); r.Code != 200 {
		t.Errorf("version 1 during the test boot of 3: %d %s, want it taken", r.Code, r.Body)
	}
	if r := f.do(newRequest("POST", "/api/v1/update/switch", "", auth)); r.Code != 200 || !strings.Contains(r.Body, "no build below security version 3") {
		t.Fatalf("switch: %d %s", r.Code, r.Body)
	}
	if b, _ := os.ReadFile(g.FloorFile); string(b) != "3\n" {
		t.Errorf("floor file %q, want 3", b)
	}
	// The floor holds even if the box then runs a build of a lower
	// version (the fallback slot, say).
	f.srv.Updates.SecurityVersion = 2
	if r := put(manifest("b4", 4, 2), "?check=1&downgrade=1"); r.Code != 403 || !strings.Contains(r.Body, "below 3") {
		t.Errorf("version 2 after 3 was made permanent: %d %s, want 403", r.Code, r.Body)
	}
	// A damaged floor is no floor of 0.
	os.WriteFile(g.FloorFile, []byte("x\n"), 0o644)
	if r := put(manifest("b7", 7, 9), ""); r.Code == 200 || !strings.Contains(r.Body, "damaged") {
		t.Errorf("a damaged floor: %d %s, want a refusal that says so", r.Code, r.Body)
	}
}

// A client whose root upload stalls (its connection lost without a
// close, as behind a NAT that forgot it) does not hold the box's updates
// for the upload's half an hour: the next manifest aborts the read and is
// taken at once.
func TestUpdateManifestAbortsStalledUpload(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	sock, _ := fakeGokrazy(t)
	f.srv.GokrazySocket = sock
	key := testGate(t, f, "b1", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	put := func(path string, body io.Reader, length int64) (int, string, error) {
		req, err := http.NewRequest("PUT", ts.URL+path, body)
		if err != nil {
			return 0, "", err
		}
		req.ContentLength = length
		req.Header.Set("Authorization", goodAuth)
		resp, err := ts.Client().Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	manifest := func(id string) string {
		signed, err := signature.Sign(key, signature.Manifest{BuildID: id, Built: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
			Root: signature.BlobOf(make([]byte, 4096)), Kernel: signature.BlobOf([]byte("kernel"))})
		if err != nil {
			t.Fatal(err)
		}
		return string(signed)
	}
	if code, body, err := put("/api/v1/update/manifest", strings.NewReader(manifest("b2")), -1); err != nil || code != 200 {
		t.Fatalf("manifest: %d %s %v", code, body, err)
	}
	// 100 bytes of the root, then nothing more.
	stalled, w := io.Pipe()
	defer w.Close()
	go w.Write(make([]byte, 100))
	first := make(chan string, 1)
	go func() {
		code, body, err := put("/api/v1/update/root", stalled, 4096)
		first <- fmt.Sprint(code, " ", body, " ", err)
	}()
	// The upload holds the gate once its handler runs.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		busy := f.srv.Updates.Busy()
		if busy == "root" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the root upload did not start")
		}
	}
	start := time.Now()
	if code, body, err := put("/api/v1/update/manifest", strings.NewReader(manifest("b3")), -1); err != nil || code != 200 {
		t.Fatalf("manifest after a stalled root: %d %s %v, want it taken", code, body, err)
	}
	if d := time.Since(start); d >= 30*time.Second { // the gate's wait for an upload it aborted
		t.Errorf("the manifest waited %v, the whole of the gate's wait: the stalled read was not aborted", d)
	}
	if got := <-first; strings.HasPrefix(got, "200 ") {
		t.Errorf("the stalled root: %s", got)
	}
}
