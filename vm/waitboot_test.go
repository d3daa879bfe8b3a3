package vm

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
)

// TestWaitBoot checks the boot wait without QEMU: a silent console is a
// stall, a console that keeps writing is waited for until /healthz
// answers.
func TestWaitBoot(t *testing.T) {
	serial := filepath.Join(t.TempDir(), "serial.log")
	os.WriteFile(serial, []byte("[    0.9] pci 0000:00:10.0: BAR 0\n"), 0o644)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	v := &VM{Options: Options{StatusPort: port}}
	start := time.Now()
	if _, err := waitBoot(v, serial, time.Minute, 3*time.Second); !errors.Is(err, errStalled) {
		t.Fatalf("silent console: %v, want a stall", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the stall took %v to notice", d)
	}
	if got := lastLine(serial); got != "[    0.9] pci 0000:00:10.0: BAR 0" {
		t.Errorf("last line %q", got)
	}

	// A console that keeps writing, and /healthz answering after 5 s.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		f, _ := os.OpenFile(serial, os.O_APPEND|os.O_WRONLY, 0)
		defer f.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				f.WriteString("booting\n")
			}
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := time.Now().Add(5 * time.Second)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().Before(up) {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		}
	})}
	// Over HTTPS, as statusd serves; the wait does not check the key.
	id, err := boxtls.Ensure(t.TempDir(), "waitboot", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	v.Options.StatusPort = ln.Addr().(*net.TCPAddr).Port
	if _, err := waitBoot(v, serial, time.Minute, 3*time.Second); err != nil {
		t.Fatalf("a console that keeps writing: %v", err)
	}
}
