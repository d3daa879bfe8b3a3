// Package chronytest runs Debian's chrony as an NTP server for tests: on
// a free loopback port, serving its host's time as a local reference
// (stratum 3) and never steering the host's clock (chronyd -x).
package chronytest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/ntp"

	"github.com/ncpos/ncpos/internal/freeradiustest"
)

// Server is a running chronyd.
type Server struct {
	Port int
	Addr string // 127.0.0.1:Port
	out  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Log is what chronyd printed so far.
func (s *Server) Log() string { return s.out.String() }

// Start starts chronyd and waits until it answers; it stops when the
// test ends. A host without chrony fails the test: scripts/deps.sh
// installs it.
func Start(t *testing.T) *Server {
	t.Helper()
	bin, err := exec.LookPath("chronyd")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/chronyd"); err != nil {
			t.Fatal("chrony is not installed (scripts/deps.sh installs Debian's chrony)")
		}
	}
	dir := t.TempDir()
	port := freeradiustest.FreeUDPPort(t)
	conf := fmt.Sprintf(`port %d
bindaddress 127.0.0.1
allow 127.0.0.1
local stratum 3
cmdport 0
pidfile %s
`, port, filepath.Join(dir, "chronyd.pid"))
	confPath := filepath.Join(dir, "chrony.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Server{Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), out: &lockedBuffer{}}
	cmd := exec.Command(bin, "-x", "-d", "-u", "root", "-f", confPath)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := ntp.QueryWithOptions(s.Addr, ntp.QueryOptions{Timeout: time.Second})
		if err == nil && r.Validate() == nil {
			return s
		}
		select {
		case <-done:
			t.Fatalf("chronyd exited: %s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("chronyd on %s does not answer within 20 s (%v): %s", s.Addr, err, s.Log())
		}
	}
}
