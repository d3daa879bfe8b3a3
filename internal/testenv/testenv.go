// Package testenv decides whether a test that needs something a machine
// may lack (root, a Debian tool, QEMU) skips or fails. Every such test asks
// here, so that each NCPOS_REQUIRE_* variable has one meaning: set to 1, a
// missing need fails the test instead of skipping it. scripts/test.sh (and
// so CI) sets all three, so that a test that cannot run is never mistaken
// for one that passed.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// The variables, each for one kind of need.
const (
	Lab   = "NCPOS_REQUIRE_LAB"   // root: network namespaces, BPF, XDP, loop devices
	Tools = "NCPOS_REQUIRE_TOOLS" // Debian tools: image tools, promtool, prometheus, chromium
	QEMU  = "NCPOS_REQUIRE_QEMU"  // qemu-system-x86_64 and the image tools, for the VM tests
)

// Required reports whether env is set to 1.
func Required(env string) bool { return os.Getenv(env) == "1" }

// Need skips t when missing is not nil, or fails it when env requires what
// is missing.
func Need(t testing.TB, env string, missing error) {
	t.Helper()
	if missing == nil {
		return
	}
	if Required(env) {
		t.Fatalf("%v (%s=1)", missing, env)
		return
	}
	t.Skip(missing)
}

// NeedRoot needs root, for what says why (e.g. "BPF").
func NeedRoot(t testing.TB, env, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Need(t, env, fmt.Errorf("%s needs root", what))
	}
}

// LookPath needs the program name, from the Debian package pkg.
func LookPath(t testing.TB, env, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Need(t, env, fmt.Errorf("%s not found: apt-get install %s", name, pkg))
	}
	return p
}
