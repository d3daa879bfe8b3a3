package testenv

import (
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
)

// netnsEnv names the test a run of the test binary is the namespace
// run of.
const netnsEnv = "NCPOS_NETNS_TEST"

// InNetNS runs the top-level test t again, as root, in a network
// namespace of its own (the test binary started with CLONE_NEWNET), and
// reports whether this is that run: the caller then does the work, and
// otherwise returns. The namespace, and every link made in it, goes with
// the process, whatever the test does.
func InNetNS(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == t.Name() {
		return true
	}
	NeedRoot(t, Lab, "a network namespace")
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	t.Logf("in a network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("namespace run: %v", err)
	}
	return false
}
