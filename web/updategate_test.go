package web

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/update/signature"
)

// blockingGokrazy is gokrazy's update endpoint that holds each root
// until release is closed, as a slow card does.
func blockingGokrazy(t *testing.T) (sock string, arrived chan string, release chan struct{}) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ncpt-gk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "gokrazy-http.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	arrived, release = make(chan string, 10), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrived <- string(b)
		<-release
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock, arrived, release
}

// While one build's root is being written, another build's manifest and
// a second root upload are refused: the root on the partition is never
// taken for another build's, which would test-boot build B's kernel on
// build A's root, and two uploads never hold a root in memory each.
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
	if r := put("/api/v1/update/manifest", manifest("B", "root of build B", "kernel B")); r.Code != 409 || !strings.Contains(r.Body, "root of build A is being received or written") {
		t.Errorf("manifest B during A's root: %d %s, want 409 naming the root being written", r.Code, r.Body)
	}
	if r := put("/api/v1/update/root", "root of build A"); r.Code != 409 || !strings.Contains(r.Body, "being received or written") {
		t.Errorf("a second root upload: %d %s, want 409", r.Code, r.Body)
	}
	if r := put("/api/v1/update/kernel", "kernel A"); r.Code != 409 {
		t.Errorf("a kernel during the root: %d %s, want 409", r.Code, r.Body)
	}
	if r := f.do(newRequest("POST", "/api/v1/update/testboot", "", auth)); r.Code != 409 {
		t.Errorf("testboot during the root: %d %s, want 409", r.Code, r.Body)
	}
	close(release)
	if r := <-first; r.Code != 200 {
		t.Fatalf("root A: %d %s", r.Code, r.Body)
	}

	// B's manifest once A's root is written starts anew: B's root is
	// not on the partition, so B's kernel does not get a test boot.
	if r := put("/api/v1/update/manifest", manifest("B", "root of build B", "kernel B")); r.Code != 200 {
		t.Fatalf("manifest B after A's root: %d %s", r.Code, r.Body)
	}
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
