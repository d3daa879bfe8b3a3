// Package freeradiustest runs Debian's FreeRADIUS for tests: on a free
// loopback port, with its own configuration, one client (127.0.0.1) and
// the users a test gives it.
package freeradiustest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running FreeRADIUS.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed when it exited
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start starts a server on a free loopback port that shares secret with
// 127.0.0.1, requires the Message-Authenticator, and knows users (a
// FreeRADIUS users file). It stops when the test ends. A host without
// FreeRADIUS fails the test: scripts/deps.sh installs it.
func Start(t *testing.T, users, secret string) *Server {
	t.Helper()
	bin, err := exec.LookPath("freeradius")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/freeradius"); err != nil {
			t.Fatal("FreeRADIUS is not installed (scripts/deps.sh installs Debian's freeradius)")
		}
	}
	dir := t.TempDir()
	port := FreeUDPPort(t)
	conf := fmt.Sprintf(`prefix = /usr
exec_prefix = /usr
sysconfdir = /etc
localstatedir = %[1]s
sbindir = /usr/sbin
logdir = %[1]s
raddbdir = %[1]s
radacctdir = %[1]s
name = freeradius
confdir = %[1]s
modconfdir = %[1]s
run_dir = %[1]s
db_dir = %[1]s
libdir = /usr/lib/freeradius
dictdir = /usr/share/freeradius
pidfile = %[1]s/radiusd.pid
max_request_time = 5
cleanup_delay = 0
max_requests = 256
hostname_lookups = no
log {
	destination = stdout
	auth = yes
}
security {
	allow_core_dumps = no
	max_attributes = 200
	reject_delay = 0
	status_server = no
}
client ncpos {
	ipaddr = 127.0.0.1
	secret = %[3]s
	require_message_authenticator = yes
}
thread pool {
	start_servers = 1
	max_servers = 2
	min_spare_servers = 1
	max_spare_servers = 2
}
modules {
	pap {
		normalise = yes
	}
	files {
		filename = %[1]s/users
	}
}
server default {
	listen {
		type = auth
		ipaddr = 127.0.0.1
		port = %[2]d
	}
	authorize {
		files
		pap
	}
	authenticate {
		Auth-Type PAP {
			pap
		}
	}
}
`, dir, port, secret)
	for name, content := range map[string]string{"radiusd.conf": conf, "users": users, "dictionary": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), out: &syncBuffer{}}
	f.cmd = exec.Command(bin, "-f", "-X", "-d", dir)
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.out
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.done = make(chan struct{})
	go func() { f.cmd.Wait(); close(f.done) }()
	t.Cleanup(func() {
		f.Stop()
		if t.Failed() {
			t.Logf("FreeRADIUS said:\n%s", f.out)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(f.out.String(), "Ready to process requests"); {
		select {
		case <-f.done:
			t.Fatalf("FreeRADIUS did not start:\n%s", f.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("FreeRADIUS did not start in 20 s:\n%s", f.out)
		}
	}
	return f
}

// Log is what the server printed (its debug output).
func (f *Server) Log() string { return f.out.String() }

// Stop stops the server: it no longer answers.
func (f *Server) Stop() {
	f.cmd.Process.Kill()
	<-f.done
}

// FreeUDPPort returns a loopback UDP port nothing listens on.
func FreeUDPPort(t *testing.T) int {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
