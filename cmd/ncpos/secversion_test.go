package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecurityVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ncpos", "security-version")
	v := func(n uint64) *uint64 { return &n }
	for _, step := range []struct {
		asked   *uint64
		want    uint32
		refused string
	}{
		{nil, 0, ""},              // nothing used yet
		{v(2), 2, ""},             // raised
		{nil, 2, ""},              // the highest used is the default
		{v(2), 2, ""},             // the same again
		{v(1), 0, "is below 2"},   // never below
		{v(0), 0, "is below 2"},   // not even 0 when asked for
		{v(3), 3, ""},             // raised again
		{v(1 << 33), 0, "want 0"}, // out of range
	} {
		got, err := securityVersion(path, step.asked)
		if step.refused != "" {
			if err == nil || !strings.Contains(err.Error(), step.refused) {
				t.Errorf("asked %d: %d, %v; want it refused (%q)", *step.asked, got, err, step.refused)
			}
			continue
		}
		if err != nil || got != step.want {
			t.Errorf("asked %v: %d, %v; want %d", step.asked, got, err, step.want)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "3\n" {
		t.Errorf("remembered %q, want 3", b)
	}
}
