package web

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/web/api"
)

// serveTLS serves f over HTTPS on loopback with a fresh identity.
func serveTLS(t *testing.T, f *fixture) (string, *boxtls.Identity) {
	t.Helper()
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.srv.TLS = id
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := f.srv.httpsServer(f.srv.Handler())
	go hs.ServeTLS(f.srv.guard().conns.wrap(ln, true), "", "")
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), id
}

// The API over HTTPS with the box's key, checked by its fingerprint as the
// host commands do; the dashboard's data names the key.
func TestHTTPSPinned(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	addr, id := serveTLS(t, f)
	pin := &boxtls.Pin{Box: "fw1", Given: id.Fingerprint}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pin.TLSConfig()}}
	resp, err := c.Get("https://" + addr + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap api.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 1 || snap.Control.TLS == nil || snap.Control.TLS.Fingerprint != id.Fingerprint || !snap.Control.TLS.Kept {
		t.Fatalf("over %s: control.tls = %+v, want %s kept", resp.Proto, snap.Control.TLS, id.Fingerprint)
	}
	other, _ := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	wrong := &boxtls.Pin{Box: "fw1", Given: other.Fingerprint}
	c = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: wrong.TLSConfig()}}
	if _, err := c.Get("https://" + addr + "/healthz"); err == nil || !strings.Contains(err.Error(), "presented the key "+id.Fingerprint) {
		t.Fatalf("with another pin: %v, want refused", err)
	}
}

// What is not TLS, or broken TLS, on the HTTPS port is refused, counted,
// and leaves the box serving.
func TestHTTPSBadClients(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.Limits = Limits{ReadHeaderTimeout: 500 * time.Millisecond} // a hello cut short waits this long
	addr, id := serveTLS(t, f)
	send := func(what string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, what)
		b, _ := io.ReadAll(bufio.NewReader(c))
		return string(b)
	}
	if got := send("GET / HTTP/1.1\r\nHost: appliance.test\r\n\r\n"); !strings.Contains(got, "400 Bad Request") || !strings.Contains(got, "HTTPS server") {
		t.Errorf("plain HTTP to the HTTPS port: %q", got)
	}
	// A ClientHello record that lies about its length, and one cut short.
	send("\x16\x03\x01\x00\x05\x01\x00\x00\xff\xff")
	send("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
	// An old protocol version.
	c := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}
	if conn, err := tls.Dial("tcp", addr, c); err == nil {
		conn.Close()
		t.Error("a TLS 1.1 client was served")
	}
	pin := &boxtls.Pin{Box: "fw1", Given: id.Fingerprint}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pin.TLSConfig()}}
	resp, err := hc.Get("https://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the bad clients: %v %v", resp, err)
	}
	resp.Body.Close()
	if v, _ := value(scrape(t, f), "ncpos_status_refused_total", "reason", "tls"); v < 3 {
		t.Errorf(`ncpos_status_refused_total{reason="tls"} = %v, want the failed handshakes counted`, v)
	}
}

// Plain HTTP only sends browsers to HTTPS; it serves nothing and takes no
// control request.
func TestPlainHTTPRedirects(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	h := f.srv.redirectHandler(8443)
	for _, tc := range []struct {
		method, host, path string
		code               int
		location, body     string
	}{
		{"GET", "appliance.test", "/api/v1/status?history=5", 301, "https://appliance.test:8443/api/v1/status?history=5", ""},
		{"GET", "127.0.0.1:8488", "/", 301, "https://127.0.0.1:8488/", ""},
		{"GET", "127.0.0.1:80", "/", 301, "https://127.0.0.1:8443/", ""},
		{"GET", "appliance.test:443", "/", 301, "https://appliance.test/", ""},
		{"GET", "127.0.0.1:99999", "/", 301, "https://127.0.0.1:8443/", ""},
		{"HEAD", "[::1]:80", "/metrics", 301, "https://[::1]:8443/metrics", ""},
		{"GET", "[::1]", "/", 301, "https://[::1]:8443/", ""},
		{"POST", "appliance.test", "/api/v1/control/reboot", 403, "", "takes no requests over plain HTTP"},
		{"GET", "evil.example", "/", 421, "", "not a name or address of this box"},
	} {
		r := newRequest(tc.method, tc.path, "", nil)
		r.Host = tc.host
		rec := newRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.code || rec.Header().Get("Location") != tc.location || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s %s%s = %d, Location %q, %s", tc.method, tc.host, tc.path, rec.Code, rec.Header().Get("Location"), rec.Body)
		}
		if strings.Contains(rec.Body.String(), "test-build-7") {
			t.Errorf("%s %s: plain HTTP served the box's state", tc.method, tc.path)
		}
	}
	rec := newRecorder()
	r := newRequest("GET", "/", "", nil)
	r.Host = "appliance.test"
	f.srv.redirectHandler(443).ServeHTTP(rec, r)
	if got := rec.Header().Get("Location"); got != "https://appliance.test/" {
		t.Errorf("redirect to the default port: %q", got)
	}
}

// The plain HTTP port sends a browser to its own port when the browser
// named one (a port forward), and speaks HTTPS there too: following the
// redirect reaches the box. A client that sends nothing is closed.
func TestPlainPortSpeaksTLS(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.srv.TLS = id
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := f.srv.guard()
	p := serveSplit(g.conns.wrap(ln, false), f.srv.httpsServer(f.srv.Handler()), g.lim.httpServer(f.srv.redirectHandler(443)), 300*time.Millisecond)
	t.Cleanup(func() { p.Close() })
	addr := ln.Addr().String()

	pin := &boxtls.Pin{Box: "fw1", Given: id.Fingerprint}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pin.TLSConfig()}}
	var hops []string
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		hops = append(hops, r.URL.String())
		return nil
	}
	resp, err := c.Get("http://" + addr + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap api.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://" + addr + "/api/v1/status"}; !slices.Equal(hops, want) || resp.TLS == nil || snap.Control.TLS == nil {
		t.Fatalf("redirected to %q (want %q), TLS %v, control.tls %+v", hops, want, resp.TLS != nil, snap.Control.TLS)
	}

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("a client that sent nothing: read %d bytes, %v, want it closed", n, err)
	}
	if resp, err := c.Get("https://" + addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after a silent client: %v %v", resp, err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("the port still takes connections after shutdown")
	}
}

// TestBootFilesOutlastWriteTimeout: the box hashes its boot partition's
// kernel files for GET /api/v1/update/boot, which on a slow card takes
// longer than the dashboard's write timeout; the answer still arrives.
func TestBootFilesOutlastWriteTimeout(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.Limits = Limits{WriteTimeout: 200 * time.Millisecond}
	f.srv.BootFiles = func() (map[string]string, error) {
		time.Sleep(700 * time.Millisecond)
		return map[string]string{"vmlinuz-a": "abc"}, nil
	}
	addr, id := serveTLS(t, f)
	pin := &boxtls.Pin{Box: "fw1", Given: id.Fingerprint}
	c := &api.Client{URL: "https://" + addr + "/", Password: fixturePassword, TLS: pin.TLSConfig()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got struct{ Files map[string]string }
	if err := c.Get(ctx, "api/v1/update/boot", &got); err != nil || got.Files["vmlinuz-a"] != "abc" {
		t.Fatalf("boot files hashed for longer than the write timeout: %+v, %v", got, err)
	}
}
