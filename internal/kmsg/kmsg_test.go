package kmsg

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kmsg")
	os.WriteFile(p, []byte("<6>earlier\n"), 0o644)
	if err := Write(p, Notice, "ncpos: one", "ncpos: two"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "<6>earlier\n<5>ncpos: one\n<5>ncpos: two\n" {
		t.Fatalf("kernel log %q", b)
	}
	if err := Write(filepath.Join(t.TempDir(), "none"), Info, "x"); err == nil {
		t.Fatal("writing to a missing device reported success")
	}
}
