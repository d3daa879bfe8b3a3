package image

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEnsurePassword(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "pw.txt")
	pw1, f, err := EnsurePassword(path)
	if err != nil || f != path || len(pw1) != 32 {
		t.Fatalf("first: %q %q %v", pw1, f, err)
	}
	pw2, _, err := EnsurePassword(path)
	if err != nil || pw2 != pw1 {
		t.Fatalf("second call gave %q, want the stored %q", pw2, pw1)
	}
	os.WriteFile(path, []byte("\n"), 0o600)
	if _, _, err := EnsurePassword(path); err == nil {
		t.Fatal("empty password file accepted")
	}
}
