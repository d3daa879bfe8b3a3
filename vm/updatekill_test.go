package vm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/update"
	"github.com/ncpos/ncpos/web/api"
)

// ncposCommand builds the host command (once) for the tests that run it
// as an operator would.
func ncposCommand(t *testing.T) string {
	t.Helper()
	ncposBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "ncpos-vmtest-cmd-")
		if err != nil {
			ncposBuild.err = err
			return
		}
		ncposBuild.dir = dir
		ncposBuild.path = filepath.Join(dir, "ncpos")
		out, err := exec.Command("go", "build", "-o", ncposBuild.path, "github.com/ncpos/ncpos/cmd/ncpos").CombinedOutput()
		if err != nil {
			ncposBuild.err = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if ncposBuild.err != nil {
		t.Fatal(ncposBuild.err)
	}
	return ncposBuild.path
}

var ncposBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

// operatorFlags are the host command's flags that sign in to the box v
// with the tests' password and trust it by the key its serial console
// shows, in a folder of their own (the command's HOME), which it returns.
func operatorFlags(t *testing.T, v *VM) (dir string, flags []string) {
	t.Helper()
	dir = t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte(testPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fpr, err := v.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	return dir, []string{"-password-file", pw, "-fingerprint", fpr, "-known", filepath.Join(dir, "known_boxes")}
}

// cutProxy passes the TCP connections made to it on to the box's status
// port and counts what each carries towards the box. Once the upload'th
// connection to carry more than uploadMark (an update's uploads: the
// root, then the kernel) has passed at bytes (at > uploadMark, counted
// as TLS carries them), it calls kill, passes nothing more and closes
// both ends of every connection: what the box sees of a client killed
// there.
type cutProxy struct {
	ln     net.Listener
	target string
	upload int
	at     int64

	mu      sync.Mutex
	kill    func()
	uploads int        // connections past uploadMark so far
	cut     bool       // kill was called
	conns   []net.Conn // every connection of both ends
}

func startCutProxy(t *testing.T, target string, upload int, at int64) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, upload: upload, at: at}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *cutProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pass(c)
	}
}

func (p *cutProxy) pass(client net.Conn) {
	box, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, client, box)
	cut := p.cut
	p.mu.Unlock()
	if cut {
		p.close()
		return
	}
	go func() {
		io.Copy(client, box)
		client.Close()
	}()
	var n int64
	this := 0 // which upload this connection carries, once it is one
	buf := make([]byte, 32<<10)
	for {
		k, err := client.Read(buf)
		if this == 0 && n+int64(k) > uploadMark {
			p.mu.Lock()
			p.uploads++
			this = p.uploads
			p.mu.Unlock()
		}
		if this == p.upload && n+int64(k) >= p.at {
			box.Write(buf[:max(p.at-n, 0)])
			p.cutHere()
			return
		}
		if _, werr := box.Write(buf[:k]); werr != nil || err != nil {
			break
		}
		n += int64(k)
	}
	box.(*net.TCPConn).CloseWrite()
}

// uploadMark is what a connection carries towards the box before the
// proxy counts it as an upload: more than any request but the root and
// the kernel.
const uploadMark = 64 << 10

// cutHere kills the client and closes every connection.
func (p *cutProxy) cutHere() {
	p.mu.Lock()
	p.cut = true
	kill := p.kill
	p.mu.Unlock()
	if kill != nil {
		kill()
	}
	p.close()
}

// killedUpdate runs `ncpos update` to the image img on the box v through a
// cutProxy, which kills the command (SIGKILL) once the upload'th upload
// (1 root, 2 kernel) has passed at bytes. It returns what the command
// printed before it died.
func killedUpdate(t *testing.T, v *VM, img string, upload int, at int64) string {
	t.Helper()
	dir, trust := operatorFlags(t, v)
	p := startCutProxy(t, fmt.Sprintf("127.0.0.1:%d", v.Options.StatusPort), upload, at)
	args := append([]string{"update", "-host", "127.0.0.1", "-status-port", strconv.Itoa(p.port()), "-image", img,
		"-inventory", filepath.Join(dir, "fleet.json"), "-downgrade", "-q", "-timeout", "2m"}, trust...)
	cmd := exec.Command(ncposCommand(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.kill = func() { cmd.Process.Signal(syscall.SIGKILL) }
	p.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("ncpos update was not cut within 10 minutes: %s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("ncpos update ended with %v before its upload %d reached %d bytes: %s", err, upload, at, out.String())
	}
	return out.String()
}

// checkAfterKill checks the box after a client died mid-update: it runs
// build running on the slot it ran, unrebooted since up, with no test
// boot set, and the update's bypass override of seg1, marked as an
// update's, expires within the lease.
func checkAfterKill(t *testing.T, v *VM, running string, slot bootpart.Slot, up time.Time) {
	t.Helper()
	s := system(t, v)
	booted := time.Now().Add(-time.Duration(s.UptimeSeconds * float64(time.Second)))
	if s.BuildID != running || booted.After(up.Add(5*time.Second)) {
		t.Fatalf("after the client died: build %s booted at %v; want %s, still up since %v", s.BuildID, booted, running, up)
	}
	if st := bootPartition(t, v).Slots; st.Running != slot || st.Default != slot || st.Once != "" {
		t.Fatalf("after the client died: slots %+v, want %s running and booted, no boot once", st, slot)
	}
	// statusd samples bypassd every second or so: the override the
	// client set just before it died shows within a few.
	var o *api.Override
	for deadline := time.Now().Add(v.Within(30 * time.Second)); o == nil; time.Sleep(time.Second) {
		g := segmentOf(snapshot(t, v), "seg1")
		if g != nil && g.Bypass != nil {
			o = g.Bypass.Override
		}
		if o == nil && time.Now().After(deadline) {
			if g != nil && g.Bypass != nil {
				t.Fatalf("after the client died: seg1's relay %+v, want the update's override in force", *g.Bypass)
			}
			t.Fatalf("after the client died: seg1 %+v, want its relay with the update's override in force", g)
		}
	}
	if !o.Update {
		t.Errorf("the update's override of seg1 %+v is not marked as an update's", *o)
	}
	if left := time.Until(o.Expires); o.Expires.IsZero() || left > update.DefaultLease || left <= 0 {
		t.Errorf("the update's override of seg1 expires at %v (in %v), want within the lease of %v", o.Expires, left.Round(time.Second), update.DefaultLease)
	} else {
		t.Logf("the update's override of seg1 (%s) expires by itself in %v", o.Reason, left.Round(time.Second))
	}
}
