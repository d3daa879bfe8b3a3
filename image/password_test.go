package image

import (
	"os"
	"strings"
	"testing"
)

// Each image gets its own password, recorded once and readable only by
// the user.
func TestNewControlPassword(t *testing.T) {
	dir := t.TempDir()
	a, fa, err := NewControlPassword(dir, "build-1")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := NewControlPassword(dir, "build-2")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two images got the same password")
	}
	if got, err := ReadPassword(fa); err != nil || got != a {
		t.Fatalf("ReadPassword = %q, %v, want %q", got, err, a)
	}
	if st, _ := os.Stat(fa); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode())
	}
	if _, _, err := NewControlPassword(dir, "build-1"); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("recording build-1 again: %v", err)
	}
	if got, _ := ReadPassword(fa); got != a {
		t.Error("the first record was overwritten")
	}
	if _, _, err := NewControlPassword(dir, "../x"); err == nil {
		t.Error("a name with a path was accepted")
	}
	os.WriteFile(fa, []byte("\n"), 0o600)
	if _, err := ReadPassword(fa); err == nil {
		t.Error("an empty password file was read")
	}
}
