package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildRefusesInvalidConfig runs the real command: an invalid
// configuration must fail with file:line: field and leave no image.
func TestBuildRefusesInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ncpos")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte(`hostname = "edge-1"
platform = "qemu"

[[segment]]
name = "seg1"
ports = ["LAN1", "LAN9"]
`), 0o644)
	img := filepath.Join(dir, "out.img")
	cmd := exec.Command(bin, "build", "-config", bad, "-o", img, "-password-file", filepath.Join(dir, "pw"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("ncpos build accepted an invalid configuration:\n%s", out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("ncpos build: %v", err)
	}
	want := bad + `:6: segment[0].ports[1]: unknown port "LAN9"`
	if !strings.Contains(string(out), want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "out.img") || strings.HasPrefix(e.Name(), ".out.img") {
			t.Fatalf("left %s behind", e.Name())
		}
	}
}
