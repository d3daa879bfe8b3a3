// Package radvdtest runs Debian's radvd for tests: a router advertising
// an IPv6 prefix (and itself as the default router) on one interface, in
// a named network namespace or the test's own.
package radvdtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ncpos/ncpos/internal/testenv"
)

// Start runs radvd on ifname in the namespace ns ("" = the test's own),
// advertising prefix every 3 to 4 seconds, until the test ends. The
// namespace is made a router first (radvd asks for IPv6 forwarding).
func Start(t *testing.T, ns, ifname, prefix string) {
	t.Helper()
	bin := testenv.LookPath(t, testenv.Tools, "radvd", "radvd")
	dir := t.TempDir()
	conf := filepath.Join(dir, "radvd.conf")
	text := "interface " + ifname + " {\n\tAdvSendAdvert on;\n\tMinRtrAdvInterval 3;\n\tMaxRtrAdvInterval 4;\n\tAdvDefaultLifetime 60;\n" +
		"\tprefix " + prefix + " {\n\t\tAdvOnLink on;\n\t\tAdvAutonomous on;\n\t};\n};\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	in := func(args ...string) *exec.Cmd {
		if ns != "" {
			args = append([]string{"ip", "netns", "exec", ns}, args...)
		}
		return exec.Command(args[0], args[1:]...)
	}
	if out, err := in("sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1").CombinedOutput(); err != nil {
		t.Fatalf("making the namespace a router: %v: %s", err, out)
	}
	out := &strings.Builder{}
	cmd := in(bin, "--nodaemon", "--config", conf, "--pidfile", filepath.Join(dir, "radvd.pid"), "--logmethod", "stderr")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("radvd on %s:\n%s", ifname, out)
		}
	})
}
