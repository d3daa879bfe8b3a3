package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The key is made once and kept; its fingerprint goes to the kernel log.
// Without a writable /perm the box still has a key, for this boot, and
// says so.
func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	kmsg := filepath.Join(dir, "kmsg")
	os.WriteFile(kmsg, nil, 0o644)
	perm := filepath.Join(dir, "perm", "ncpos", "tls")
	a, note, err := identity(perm, "fw1", kmsg)
	if err != nil || note != "" || !a.Created {
		t.Fatalf("first boot: %v, note %q", err, note)
	}
	b, _, err := identity(perm, "fw1", kmsg)
	if err != nil || b.Created || b.Fingerprint != a.Fingerprint {
		t.Fatalf("second boot: %v, fingerprint %s, want the kept %s", err, b.Fingerprint, a.Fingerprint)
	}
	logged, _ := os.ReadFile(kmsg)
	if n := strings.Count(string(logged), "<5>ncpos: statusd: TLS key "+a.Fingerprint); n != 2 {
		t.Fatalf("kernel log:\n%s\nwant the fingerprint at each start", logged)
	}

	t.Setenv("NCPOS_RUN_DIR", filepath.Join(dir, "run"))
	ro := filepath.Join(dir, "notadir")
	os.WriteFile(ro, nil, 0o444)
	c, note, err := identity(filepath.Join(ro, "tls"), "fw1", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note, "not kept") || !strings.HasPrefix(c.Path, filepath.Join(dir, "run")) {
		t.Fatalf("without /perm: note %q, key in %s", note, c.Path)
	}
}
