package main

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/web/api"
)

// TestHostWithPort reaches a box given as host:port, [v6]:port and a
// bare IPv6 address with -status-port, as network tools take them.
func TestHostWithPort(t *testing.T) {
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	serve := func(network, addr string) string {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("listening on %s %s: %v", network, addr, err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ncpos" || p != "fw1-password-long" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			json.NewEncoder(w).Encode(api.ConfigInForce{Text: "hostname = \"fw1\"\n", Version: 3, By: "ncpos", From: "192.0.2.7"})
		}))
		srv.Listener.Close()
		srv.Listener = ln
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return ln.Addr().String()
	}
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("fw1-password-long\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(host ...string) (string, error) {
		args := append([]string{"get", "-host"}, host...)
		args = append(args, "-password-file", pw, "-fingerprint", id.Fingerprint, "-known", filepath.Join(dir, "known"))
		return captureStdout(t, func() error { return runConfig(t.Context(), args) })
	}
	v4 := serve("tcp4", "127.0.0.1:0")
	if out, err := get(v4); err != nil || !strings.Contains(out, `hostname = "fw1"`) {
		t.Errorf("config get -host %s: %v\n%s", v4, err, out)
	}
	_, port, _ := net.SplitHostPort(v4)
	if _, err := get("127.0.0.1:"+port, "-status-port", "1"); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("config get -host 127.0.0.1:%s -status-port 1: %v, want a refusal of two ports", port, err)
	}
	if _, err := get("127.0.0.1/x"); err == nil || !strings.Contains(err.Error(), "-host") {
		t.Errorf("config get -host 127.0.0.1/x: %v, want an error naming -host", err)
	}
	v6 := serve("tcp6", "[::1]:0")
	_, port, _ = net.SplitHostPort(v6)
	for _, host := range [][]string{{"[::1]:" + port}, {"::1", "-status-port", port}, {"[::1]", "-status-port", port}} {
		if out, err := get(host...); err != nil || !strings.Contains(out, `hostname = "fw1"`) {
			t.Errorf("config get -host %s: %v\n%s", strings.Join(host, " "), err, out)
		}
	}
}
