package web

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/web/update"
)

// testGate gives the fixture's server an update gate that trusts a new
// key, for a running build, and returns the key. It is read from files,
// as statusd reads the running build's.
func testGate(t *testing.T, f *fixture, running string, built time.Time) ed25519.PrivateKey {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc/ncpos"), 0o755)
	os.WriteFile(filepath.Join(root, update.TrustedKeysFile), []byte("# test\n"+signature.FormatKey(pub)+"\n"), 0o644)
	os.WriteFile(filepath.Join(root, update.BuildIDFile), []byte(running+"\n"), 0o644)
	if !built.IsZero() {
		os.WriteFile(filepath.Join(root, update.BuiltFile), []byte(built.Format(time.RFC3339)+"\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemTotal:        2048000 kB\nMemAvailable:    1536000 kB\n"), 0o644)
	if f.srv.Updates, err = update.LoadGate(root); err != nil {
		t.Fatal(err)
	}
	if f.srv.Updates.Running != running || !f.srv.Updates.Built.Equal(built) || len(f.srv.Updates.Trusted) != 1 {
		t.Fatalf("gate %+v", f.srv.Updates)
	}
	return key
}

// fakeGokrazy serves gokrazy's update endpoints on a unix socket, as
// gokrazy does on a box without a gokrazy password.
func fakeGokrazy(t *testing.T) (sock string, got chan string) {
	t.Helper()
	got = make(chan string, 10)
	return gokrazySocket(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + r.URL.Path + " " + string(b)
		sum := sha256.Sum256(b)
		w.Write([]byte(hex.EncodeToString(sum[:])))
	}), got
}

// gokrazySocket serves h where gokrazy serves, on a unix socket of its
// own, until the test ends.
func gokrazySocket(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ncpt-gk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gokrazy-http.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// fakeSlots is a boot partition with a kernel per slot, in memory.
type fakeSlots struct {
	state   bootpart.State
	kernels map[bootpart.Slot][]byte
	did     []string
}

func (f *fakeSlots) Read() (*bootpart.State, error) { s := f.state; return &s, nil }
func (f *fakeSlots) KernelHash(s bootpart.Slot) (string, error) {
	return signature.BlobOf(f.kernels[s]).SHA256, nil
}
func (f *fakeSlots) WriteKernel(s bootpart.Slot, k []byte) error {
	f.kernels[s] = k
	f.did = append(f.did, "kernel "+string(s))
	return nil
}
func (f *fakeSlots) BootOnce(s bootpart.Slot) error {
	f.state.Once = s
	f.did = append(f.did, "once "+string(s))
	return nil
}
func (f *fakeSlots) SetDefault(s bootpart.Slot) error {
	f.state.Default, f.state.Once = s, ""
	f.did = append(f.did, "default "+string(s))
	return nil
}

// An update reaches gokrazy only through statusd, with the password and
// from the box's own origin; everything else is refused before gokrazy
// hears of it.
func TestUpdateThroughStatusd(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	sock, got := fakeGokrazy(t)
	f.srv.GokrazySocket = sock
	send := func(method, path, body string, h map[string]string) *httpResult {
		r := newRequest(method, path, body, h)
		if n := h["Content-Length"]; n != "" {
			r.ContentLength, _ = strconv.ParseInt(n, 10, 64) // what the client claims
		}
		return f.do(r)
	}
	auth := map[string]string{"Authorization": goodAuth}
	key := testGate(t, f, "b1", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	newRoot := "new root image"
	if r := send("PUT", "/api/v1/update/root", newRoot, auth); r.Code != 409 || !strings.Contains(r.Body, "no signed manifest") {
		t.Fatalf("root before a manifest: %d %s", r.Code, r.Body)
	}
	m := signature.Manifest{BuildID: "b2", Built: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		Root: signature.BlobOf([]byte(newRoot)), Kernel: signature.BlobOf([]byte("kernel"))}
	signed, err := signature.Sign(key, m)
	if err != nil {
		t.Fatal(err)
	}
	if r := send("PUT", "/api/v1/update/manifest", string(signed), auth); r.Code != 200 || !strings.Contains(r.Body, "build b2") {
		t.Fatalf("PUT manifest = %d %s", r.Code, r.Body)
	}
	if r := send("POST", "/api/v1/update/testboot", "", auth); r.Code != 409 || !strings.Contains(r.Body, "no verified root") {
		t.Fatalf("testboot before the root: %d %s", r.Code, r.Body)
	}
	// A root that is not the signed one, of the same length or cut
	// short, is refused before gokrazy hears of it.
	if r := send("PUT", "/api/v1/update/root", "new ROOT image", auth); r.Code != 403 || !strings.Contains(r.Body, "SHA-256") {
		t.Fatalf("altered root: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/root", "new root", auth); r.Code != 400 || !strings.Contains(r.Body, "signed build's is 14") {
		t.Fatalf("short root: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/root", "new root", map[string]string{"Authorization": goodAuth, "Content-Length": "14"}); r.Code != 400 || !strings.Contains(r.Body, "nothing written") {
		t.Fatalf("root cut off: %d %s", r.Code, r.Body)
	}
	// A root that would leave the box short of memory is refused
	// before it is received.
	meminfo := f.srv.Updates.Meminfo
	low := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(low, []byte("MemTotal: 64 kB\nMemAvailable: 10 kB\n"), 0o644)
	f.srv.Updates.Meminfo = low
	if r := send("PUT", "/api/v1/update/root", newRoot, auth); r.Code != 507 || !strings.Contains(r.Body, "not enough memory") {
		t.Fatalf("root without room: %d %s", r.Code, r.Body)
	}
	f.srv.Updates.Meminfo = meminfo
	r := send("PUT", "/api/v1/update/root", newRoot, auth)
	sum := sha256.Sum256([]byte(newRoot))
	if r.Code != 200 || r.Body != hex.EncodeToString(sum[:]) {
		t.Fatalf("PUT root = %d %q", r.Code, r.Body)
	}
	if g := <-got; g != "PUT /update/root new root image" {
		t.Fatalf("gokrazy got %q", g)
	}
	// The kernel and the test boot are the box's own doing, on its boot
	// partition: the kernel checked against the manifest before it is
	// written to the inactive slot, the test boot only of the signed
	// kernel.
	if r := send("POST", "/api/v1/update/testboot", "", auth); r.Code != 503 {
		t.Fatalf("testboot without a boot partition: %d %s", r.Code, r.Body)
	}
	slots := &fakeSlots{state: bootpart.State{Firmware: "bios", Running: "a", Default: "a"},
		kernels: map[bootpart.Slot][]byte{"a": []byte("old kernel"), "b": []byte("old kernel")}}
	f.srv.Boot = slots
	if r := send("POST", "/api/v1/update/testboot", "", auth); r.Code != 409 || !strings.Contains(r.Body, "slot b's kernel is not build b2's") {
		t.Fatalf("testboot before the kernel: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/kernel", "KERNEL", auth); r.Code != 403 || !strings.Contains(r.Body, "nothing written") {
		t.Fatalf("altered kernel: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/kernel", "kern", map[string]string{"Authorization": goodAuth, "Content-Length": "6"}); r.Code != 400 || !strings.Contains(r.Body, "nothing written") {
		t.Fatalf("kernel cut off: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/kernel", "kernel", auth); r.Code != 200 || !strings.Contains(r.Body, "written to slot b") {
		t.Fatalf("kernel: %d %s", r.Code, r.Body)
	}
	if r := send("POST", "/api/v1/update/testboot", "", auth); r.Code != 200 || !strings.Contains(r.Body, "boots once from slot b") {
		t.Fatalf("testboot = %d %s", r.Code, r.Body)
	}
	if strings.Join(slots.did, ",") != "kernel b,once b" || string(slots.kernels["a"]) != "old kernel" {
		t.Fatalf("boot partition: did %v, slot a's kernel %q", slots.did, slots.kernels["a"])
	}
	// After the reboot into slot b: the switch makes it the default.
	slots.state.Running, slots.state.Once = "b", ""
	if r := send("PUT", "/api/v1/update/kernel", "kernel", auth); r.Code != 409 || !strings.Contains(r.Body, "test-boots slot b") {
		t.Fatalf("kernel during a test boot: %d %s", r.Code, r.Body)
	}
	if r := send("POST", "/api/v1/update/switch", "", auth); r.Code != 200 || !strings.Contains(r.Body, "slot b (root partition 3) boots from now on") {
		t.Fatalf("switch = %d %s", r.Code, r.Body)
	}
	if r := send("POST", "/api/v1/update/switch", "", auth); r.Code != 409 || !strings.Contains(r.Body, "nothing to make permanent") {
		t.Fatalf("switch again = %d %s", r.Code, r.Body)
	}
	if strings.Join(slots.did, ",") != "kernel b,once b,default b" {
		t.Fatalf("boot partition: did %v", slots.did)
	}
	for _, tc := range []struct {
		name, method, path string
		headers            map[string]string
		code               int
		says               string
	}{
		{"no password", "PUT", "/api/v1/update/root", nil, 401, "authentication required"},
		{"gokrazy's user", "PUT", "/api/v1/update/root", map[string]string{"Authorization": basic("gokrazy", fixturePassword)}, 401, ""},
		{"cross-site", "POST", "/api/v1/update/switch", map[string]string{"Authorization": goodAuth, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "cross-site"},
		{"unknown step", "PUT", "/api/v1/update/divert", auth, 404, "no update step"},
		{"wrong method", "GET", "/api/v1/update/switch", auth, 405, "takes POST"},
		{"too big", "PUT", "/api/v1/update/root", map[string]string{"Authorization": goodAuth, "Content-Length": "2000000000"}, 413, "at most"},
		{"a whole boot partition", "PUT", "/api/v1/update/boot", auth, 405, "takes GET"},
	} {
		r := send(tc.method, tc.path, "x", tc.headers)
		if r.Code != tc.code || !strings.Contains(r.Body, tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, r.Code, r.Body, tc.code, tc.says)
		}
	}
	// Manifests that are unsigned, signed by a key the box does not
	// trust, forged, or of an older build are refused, and the refusal
	// leaves no manifest pending.
	_, untrusted, _ := ed25519.GenerateKey(rand.Reader)
	unsigned, _ := signature.Unsigned(m)
	other, _ := signature.Sign(untrusted, m)
	var forged signature.Signed
	json.Unmarshal(signed, &forged)
	forged.Manifest = []byte(strings.Replace(string(forged.Manifest), `"b2"`, `"b3"`, 1))
	forgedJSON, _ := json.Marshal(forged)
	older := m
	older.BuildID, older.Built = "b0", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	oldJSON, _ := signature.Sign(key, older)
	for _, tc := range []struct {
		name, body, query string
		code              int
		says              string
	}{
		{"unsigned", string(unsigned), "", 403, "not signed"},
		{"untrusted", string(other), "", 403, "does not trust"},
		{"forged", string(forgedJSON), "", 403, "forged"},
		{"older", string(oldJSON), "", 409, "ask for a downgrade"},
		{"not JSON", "root", "", 400, "manifest"},
	} {
		if r := send("PUT", "/api/v1/update/manifest"+tc.query, tc.body, auth); r.Code != tc.code || !strings.Contains(r.Body, tc.says) {
			t.Errorf("manifest %s: %d %s, want %d saying %q", tc.name, r.Code, r.Body, tc.code, tc.says)
		}
	}
	if r := send("PUT", "/api/v1/update/root", newRoot, auth); r.Code != 409 {
		t.Errorf("root after a refused manifest: %d %s, want 409", r.Code, r.Body)
	}
	// A dry run's check says what the box would do and leaves nothing
	// pending.
	if r := send("PUT", "/api/v1/update/manifest?check=1", string(oldJSON), auth); r.Code != 409 || !strings.Contains(r.Body, "ask for a downgrade") {
		t.Errorf("checking an older build: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/manifest?check=1&downgrade=1", string(oldJSON), auth); r.Code != 200 || !strings.Contains(r.Body, "would be accepted") {
		t.Errorf("checking a downgrade asked for: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/root", newRoot, auth); r.Code != 409 {
		t.Errorf("root after a check only: %d %s, want 409", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/manifest?downgrade=1", string(oldJSON), auth); r.Code != 200 || !strings.Contains(r.Body, "build b0") {
		t.Errorf("a downgrade asked for: %d %s", r.Code, r.Body)
	}
	// A manifest cut off starts the update anew all the same: the one
	// pending before is dropped, and a root now is refused.
	if r := send("PUT", "/api/v1/update/manifest?downgrade=1", string(oldJSON[:20]), map[string]string{"Authorization": goodAuth, "Content-Length": strconv.Itoa(len(oldJSON))}); r.Code != 400 {
		t.Errorf("a manifest cut off: %d %s, want 400", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/root", newRoot, auth); r.Code != 409 || !strings.Contains(r.Body, "no signed manifest") {
		t.Errorf("root after a manifest cut off: %d %s, want 409", r.Code, r.Body)
	}
	select {
	case g := <-got:
		t.Fatalf("a refused request reached gokrazy: %q", g)
	default:
	}
	// The boot partition's files, for an update to compare with what it
	// would write.
	if r := send("GET", "/api/v1/update/boot", "", auth); r.Code != 503 {
		t.Errorf("boot files without a reader: %d %s", r.Code, r.Body)
	}
	f.srv.BootFiles = func() (map[string]string, error) { return map[string]string{"vmlinuz-a": "abc"}, nil }
	if r := send("GET", "/api/v1/update/boot", "", auth); r.Code != 200 || r.Body != `{"files":{"vmlinuz-a":"abc"},"slots":{"firmware":"bios","running":"b","default":"b","syslinux":"","loader":""}}`+"\n" {
		t.Errorf("boot files: %d %q", r.Code, r.Body)
	}
	if r := send("GET", "/api/v1/update/boot", "", nil); r.Code != 401 {
		t.Errorf("boot files without the password: %d %s", r.Code, r.Body)
	}
	f.srv.Updates = nil
	if r := send("PUT", "/api/v1/update/manifest", string(signed), auth); r.Code != 503 || !strings.Contains(r.Body, "trusts no update keys") {
		t.Errorf("a build without keys: %d %s", r.Code, r.Body)
	}
	key = testGate(t, f, "b1", time.Time{})
	f.srv.GokrazySocket = filepath.Join(t.TempDir(), "none.sock")
	if signed, err = signature.Sign(key, m); err != nil {
		t.Fatal(err)
	}
	if r := send("PUT", "/api/v1/update/manifest", string(signed), auth); r.Code != 200 {
		t.Fatalf("manifest: %d %s", r.Code, r.Body)
	}
	if r := send("PUT", "/api/v1/update/root", newRoot, auth); r.Code != 502 || !strings.Contains(r.Body, "passing the update to gokrazy") {
		t.Errorf("without gokrazy = %d %s, want 502", r.Code, r.Body)
	}
	var steps []string
	for _, e := range f.events.Recent(0) {
		if e.Kind == events.KindControl && e.Fields["action"] == "update" {
			steps = append(steps, e.Fields["step"])
		}
	}
	// Newest first: every step, refused or passed on, is an event.
	if strings.Join(steps, ",") != "root,manifest,manifest,root,manifest,manifest,root,manifest,manifest,root,manifest,manifest,manifest,manifest,manifest,switch,switch,kernel,testboot,kernel,kernel,kernel,testboot,testboot,root,root,root,root,root,testboot,manifest,root" {
		t.Errorf("update events for steps %v", steps)
	}
}
