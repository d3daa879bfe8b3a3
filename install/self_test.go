package install

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A copied /perm keeps the configuration and nothing that is the source
// box's own: identities, records and reports.
func TestCopyKeepsOnlyConfig(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"machine-id":                     "source's",
		"ncpos/control-password":         "source's hash",
		"ncpos/ncpos.toml":               "[status]\n",
		"ncpos/last-good.toml":           "[status]\n",
		"ncpos/profiles/box.toml":        "operator's profile",
		"ncpos/snmp/engine.json":         `{"engine_id":"80007ed9"}`,
		"ncpos/selftest/latest.json":     "{}",
		"ncpos/bypass-overrides.json":    "{}",
		"ncpos/bypass.log":               "relay changes",
		"ncpos/bypass.log.1":             "older relay changes",
		"ncpos/tls/identity.pem":         "source's key",
		"ncpos/tls/identity.pem.bad":     "source's old key",
		"ncpos/watchdog/last-reset.json": "{}",
		"ncpos/some-later-state.json":    "{}",
		"gokrazy/state":                  "x",
		"lost+found/#123":                "fsck's",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := keepOnlyConfig(dir); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, rel)
		}
		return nil
	})
	slices.Sort(left)
	want := []string{"lost+found/#123", "ncpos/last-good.toml", "ncpos/ncpos.toml", "ncpos/profiles/box.toml"}
	if !slices.Equal(left, want) {
		t.Errorf("the copy holds %s, want only %s", strings.Join(left, ", "), strings.Join(want, ", "))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ncpos/ncpos.toml")); string(b) != "[status]\n" {
		t.Errorf("configuration %q", b)
	}
}
