// Package lldpdtest runs Debian's lldpd as the LLDP neighbour of a
// test's port, inside a network namespace, as the lab and VM tests need.
package lldpdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/testenv"
)

// Lldpd is one lldpd on one interface.
type Lldpd struct {
	ns, sock, cli string
	stop          func(syscall.Signal)
}

// Start runs lldpd in the namespace ns on ifname only, calling itself
// sysName and sending every second (its TTL is then 4 s); it is stopped
// with SIGTERM when the test ends, and its output shown if the test failed.
func Start(t *testing.T, ns, ifname, sysName string) *Lldpd {
	t.Helper()
	bin := testenv.LookPath(t, testenv.Tools, "lldpd", "lldpd")
	cli := testenv.LookPath(t, testenv.Tools, "lldpcli", "lldpd")
	// Not t.TempDir: lldpd's own lldpcli, which reads the configuration
	// and talks on the socket, runs as lldpd's unprivileged user.
	dir, err := os.MkdirTemp("", "ncpt-lldpd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "lldpd.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("configure system hostname %s\nconfigure lldp tx-interval 1\n", sysName)), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &Lldpd{ns: ns, sock: filepath.Join(dir, "lldpd.socket"), cli: cli}
	// -d: in the foreground; -O: this configuration
	// alone; -u: its own control socket; -I: this interface only.
	cmd := exec.Command("ip", "netns", "exec", ns, bin, "-d", "-O", conf, "-u", l.sock, "-I", ifname)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stopped := false
	l.stop = func(sig syscall.Signal) {
		if stopped {
			return
		}
		stopped = true
		syscall.Kill(-cmd.Process.Pid, sig)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	t.Cleanup(func() {
		l.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("lldpd %s:\n%s", sysName, out)
		}
	})
	return l
}

// Stop stops lldpd with sig: SIGTERM has it say goodbye (a TTL 0 frame),
// SIGKILL leaves its neighbours to age out.
func (l *Lldpd) Stop(sig syscall.Signal) { l.stop(sig) }

// Hears waits up to within until lldpd has heard exactly one neighbour,
// named want, and returns what lldpcli says of its neighbours.
func (l *Lldpd) Hears(t *testing.T, want string, within time.Duration) string {
	t.Helper()
	var out []byte
	for deadline := time.Now().Add(within); ; time.Sleep(200 * time.Millisecond) {
		var err error
		out, err = exec.Command("ip", "netns", "exec", l.ns, l.cli, "-u", l.sock, "show", "neighbors", "summary").CombinedOutput()
		if err == nil && strings.Contains(string(out), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lldpd in %s does not hear %s:\n%s", l.ns, want, out)
		}
	}
	if n := strings.Count(string(out), "SysName:"); n != 1 {
		t.Errorf("lldpd in %s hears %d neighbours, want %s alone:\n%s", l.ns, n, want, out)
	}
	return string(out)
}

// Socket is lldpd's control socket, for lldpcli -u.
func (l *Lldpd) Socket() string { return l.sock }
