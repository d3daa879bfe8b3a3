package signature

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func manifest() Manifest {
	return Manifest{BuildID: "b2", Built: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		Root: BlobOf([]byte("root")), Kernel: BlobOf([]byte("kernel"))}
}

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

func TestVerify(t *testing.T) {
	key, other := newKey(t), newKey(t)
	signed, err := Sign(key, manifest())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Verify(signed, []ed25519.PublicKey{pub(other), pub(key)})
	if err != nil {
		t.Fatalf("a build signed by a trusted key: %v", err)
	}
	if m.BuildID != "b2" || m.Root != BlobOf([]byte("root")) {
		t.Errorf("manifest %+v", m)
	}
	if _, err := Verify(signed, []ed25519.PublicKey{pub(other)}); !errors.Is(err, ErrUntrusted) {
		t.Errorf("signed by a key not trusted: %v, want ErrUntrusted", err)
	}
	if _, err := Verify(signed, nil); !errors.Is(err, ErrUntrusted) {
		t.Errorf("no key trusted: %v, want ErrUntrusted", err)
	}
	unsigned, err := Unsigned(manifest())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(unsigned, []ed25519.PublicKey{pub(key)}); !errors.Is(err, ErrUnsigned) {
		t.Errorf("unsigned: %v, want ErrUnsigned", err)
	}

	// Forged: the manifest changed after signing (another root), and a
	// signature of another manifest.
	var s Signed
	if err := json.Unmarshal(signed, &s); err != nil {
		t.Fatal(err)
	}
	forged := s
	forged.Manifest = []byte(strings.Replace(string(s.Manifest), BlobOf([]byte("root")).SHA256, BlobOf([]byte("evil")).SHA256, 1))
	b, _ := json.Marshal(forged)
	if _, err := Verify(b, []ed25519.PublicKey{pub(key)}); !errors.Is(err, ErrForged) {
		t.Errorf("altered manifest: %v, want ErrForged", err)
	}
	m2 := manifest()
	m2.BuildID = "b3"
	other2, _ := Sign(key, m2)
	var s2 Signed
	json.Unmarshal(other2, &s2)
	forged.Manifest, forged.Signature = s.Manifest, s2.Signature
	b, _ = json.Marshal(forged)
	if _, err := Verify(b, []ed25519.PublicKey{pub(key)}); !errors.Is(err, ErrForged) {
		t.Errorf("another manifest's signature: %v, want ErrForged", err)
	}
	// A key claiming to be a trusted one but signing with another.
	forged = s
	forged.Signature = ed25519.Sign(other, s.Manifest)
	b, _ = json.Marshal(forged)
	if _, err := Verify(b, []ed25519.PublicKey{pub(key)}); !errors.Is(err, ErrForged) {
		t.Errorf("signed by another key under the trusted one's name: %v, want ErrForged", err)
	}
	for name, bad := range map[string]string{
		"not JSON":      "root",
		"no manifest":   `{"key":"x"}`,
		"unknown field": `{"manifest":"e30=","extra":1}`,
	} {
		if _, err := Verify([]byte(bad), []ed25519.PublicKey{pub(key)}); err == nil || errors.Is(err, ErrForged) {
			t.Errorf("%s: %v, want an error that says what is wrong", name, err)
		}
	}
	// A signed manifest that names no root is refused though its
	// signature holds.
	empty, _ := Sign(key, Manifest{BuildID: "x", Built: time.Now()})
	if _, err := Verify(empty, []ed25519.PublicKey{pub(key)}); err == nil || !strings.Contains(err.Error(), "lacks") {
		t.Errorf("a manifest without root or kernel: %v", err)
	}
}

func TestBlobCheck(t *testing.T) {
	bl := BlobOf([]byte("root"))
	if err := bl.Check("root", []byte("root")); err != nil {
		t.Error(err)
	}
	if err := bl.Check("root", []byte("roo")); err == nil || !strings.Contains(err.Error(), "3 bytes") {
		t.Errorf("short: %v", err)
	}
	if err := bl.Check("root", []byte("rooT")); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("altered: %v", err)
	}
}

func TestCheckOrder(t *testing.T) {
	m := manifest()
	older, newer := m.Built.Add(-time.Hour), m.Built.Add(time.Hour)
	for _, c := range []struct {
		running   string
		built     time.Time
		downgrade bool
		want      error
	}{
		{"b1", older, false, nil},
		{"b1", time.Time{}, false, nil}, // a build of unknown age
		{"b9", newer, false, ErrDowngrade},
		{"b9", newer, true, nil},
		{"b9", m.Built, false, ErrDowngrade}, // the same time is no newer
		{"b2", older, true, ErrSameBuild},
	} {
		err := CheckOrder(c.running, c.built, &m, c.downgrade)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("running %s built %v, downgrade %v: %v, want %v", c.running, c.built, c.downgrade, err, c.want)
		}
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys", "signing.pem")
	k, created, err := LoadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("first use: created %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v", fi, err)
	}
	k2, created, err := LoadOrCreateKey(path)
	if err != nil || created || !k.Equal(k2) {
		t.Fatalf("second use: created %v, same %v, %v", created, k.Equal(k2), err)
	}
	keys, err := ParseKeys([]byte("# trusted\n\n" + FormatKey(pub(k)) + " build host\n"))
	if err != nil || len(keys) != 1 || !keys[0].Equal(pub(k)) {
		t.Fatalf("ParseKeys: %v, %v", keys, err)
	}
	for _, bad := range []string{"ssh-ed25519 AAAA", "ncpos-ed25519 !!!", "ncpos-ed25519 AAAA", "ncpos-ed25519"} {
		if _, err := ParseKeys([]byte("\n" + bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v, want an error naming line 2", bad, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "bad.pem"), []byte("not a key"), 0o600)
	if _, _, err := LoadOrCreateKey(filepath.Join(dir, "bad.pem")); err == nil {
		t.Error("a file that is no key was taken")
	}
}
