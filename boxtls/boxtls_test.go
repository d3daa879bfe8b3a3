package boxtls

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnsureMakesOnceAndKeeps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a, err := Ensure(dir, "fw1", now)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Created || !strings.HasPrefix(a.Fingerprint, "sha256:") || len(a.Fingerprint) != 7+64 {
		t.Fatalf("first Ensure: created %v fingerprint %q", a.Created, a.Fingerprint)
	}
	st, err := os.Stat(filepath.Join(dir, file))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("identity file: %v mode %v, want 0600", err, st.Mode())
	}
	b, err := Ensure(dir, "fw1", now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if b.Created || b.Fingerprint != a.Fingerprint {
		t.Fatalf("second Ensure: created %v, fingerprint %s, want the kept %s", b.Created, b.Fingerprint, a.Fingerprint)
	}
	leaf := b.Cert.Leaf
	if leaf.Subject.CommonName != "fw1" || leaf.NotBefore.Year() != 2000 || !leaf.NotAfter.After(now.AddDate(40, 0, 0)) {
		t.Errorf("certificate %v valid %v to %v", leaf.Subject, leaf.NotBefore, leaf.NotAfter)
	}
	// Another box, another key.
	c, err := Ensure(filepath.Join(t.TempDir(), "tls"), "fw1", now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fingerprint == a.Fingerprint {
		t.Fatal("two identities share a key")
	}
}

func TestEnsureReplacesDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := Ensure(dir, "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !id.Created || !strings.Contains(id.Replaced, path) {
		t.Fatalf("created %v, replaced %q: want a new identity that says what was wrong with %s", id.Created, id.Replaced, path)
	}
	if b, err := os.ReadFile(path + ".bad"); err != nil || !strings.Contains(string(b), "garbage") {
		t.Fatalf("the damaged identity was not kept aside: %v", err)
	}
}

func TestParseFingerprint(t *testing.T) {
	const hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{
		"sha256:" + hex:                  "sha256:" + hex,
		"SHA256:" + strings.ToUpper(hex): "sha256:" + hex,
		" " + hex + "\n":                 "sha256:" + hex,
		"01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef": "sha256:" + hex,
	} {
		if got, err := ParseFingerprint(in); err != nil || got != want {
			t.Errorf("ParseFingerprint(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "sha256:", "sha256:" + hex[:62], "sha1:" + hex, hex + "00", "sha256:" + strings.Repeat("g", 64)} {
		if _, err := ParseFingerprint(bad); err == nil || !strings.Contains(err.Error(), "want sha256: and 64 hex digits") {
			t.Errorf("ParseFingerprint(%q) = %v, want a clear error", bad, err)
		}
	}
}

// box serves HTTPS with a fresh identity.
func box(t *testing.T) (*httptest.Server, *Identity) {
	t.Helper()
	id, err := Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, id
}

func get(p *Pin, url string) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: p.TLSConfig(), DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// First contact pins the key; the same box is accepted again by a later
// command, another key under the same name is refused with what to do,
// and a fingerprint the operator gives replaces the pin.
func TestPinTrustOnFirstUse(t *testing.T) {
	known := &Known{Path: filepath.Join(t.TempDir(), "known_boxes")}
	s1, id1 := box(t)
	var logged []string
	p := &Pin{Box: "fw1.example", Known: known, Logf: func(f string, a ...any) { logged = append(logged, f) }}
	if err := get(p, s1.URL); err != nil {
		t.Fatalf("first contact: %v", err)
	}
	if fp, ok, _ := known.Get("fw1.example"); !ok || fp != id1.Fingerprint || len(logged) != 1 {
		t.Fatalf("pinned %q %v (logged %q), want %s", fp, ok, logged, id1.Fingerprint)
	}
	if err := get(&Pin{Box: "fw1.example", Known: known}, s1.URL); err != nil {
		t.Fatalf("second command, same box: %v", err)
	}

	s2, id2 := box(t) // the box reinstalled, or someone in between
	err := get(&Pin{Box: "fw1.example", Known: known}, s2.URL)
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.Want != id1.Fingerprint || mm.Got != id2.Fingerprint {
		t.Fatalf("changed key: %v, want a mismatch naming both keys", err)
	}
	for _, want := range []string{known.Path, "-fingerprint " + id2.Fingerprint, "serial console"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("mismatch error does not say %q: %v", want, err)
		}
	}
	if fp, _, _ := known.Get("fw1.example"); fp != id1.Fingerprint {
		t.Fatal("a refused key replaced the pin")
	}
	if err := get(&Pin{Box: "fw1.example", Known: known, Given: id2.Fingerprint}, s2.URL); err != nil {
		t.Fatalf("with the new fingerprint given: %v", err)
	}
	if fp, _, _ := known.Get("fw1.example"); fp != id2.Fingerprint {
		t.Fatalf("the given fingerprint was not pinned: %s", fp)
	}
	if err := get(&Pin{Box: "fw1.example", Given: id2.Fingerprint}, s1.URL); !errors.As(err, &mm) {
		t.Fatalf("the old box against a given fingerprint: %v, want refused", err)
	}
	if err := get(&Pin{Box: "fw1.example", Given: "sha256:beef"}, s1.URL); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Fatalf("a malformed fingerprint: %v", err)
	}
}

func TestKnownFile(t *testing.T) {
	k := &Known{Path: filepath.Join(t.TempDir(), "sub", "known_boxes")}
	fp := "sha256:" + strings.Repeat("ab", 32)
	for _, b := range []string{"10.0.0.5", "fw2", "10.0.0.5"} {
		if err := k.Set(b, fp); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(k.Path)
	if n := strings.Count(string(data), "10.0.0.5 "); n != 1 {
		t.Fatalf("10.0.0.5 appears %d times:\n%s", n, data)
	}
	if err := k.Set("two words", fp); err == nil {
		t.Error("a name with a space was pinned")
	}
	os.WriteFile(k.Path, []byte("fw1 sha256:nothex\n"), 0o600)
	if _, _, err := k.Get("fw1"); err == nil || !strings.Contains(err.Error(), k.Path+":1:") {
		t.Errorf("damaged known file: %v, want its line named", err)
	}
}

// An identity that cannot be read is not a damaged one: Ensure says so
// and leaves it, and nothing is moved aside or made. A loop of links
// stands for any read error (EIO, EMFILE) that root cannot be denied.
func TestEnsureLeavesUnreadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, file)
	if err := os.Symlink(file, path); err != nil {
		t.Fatal(err)
	}
	if id, err := Ensure(dir, "fw1", time.Now()); err == nil || !strings.Contains(err.Error(), "left as it is") {
		t.Fatalf("an unreadable identity: %v; want an error that leaves it (got identity %v)", err, id != nil)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s was replaced: %v %v", path, fi, err)
	}
	if _, err := os.Lstat(path + ".bad"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.bad exists: %v", path, err)
	}
}
