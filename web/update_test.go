package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/events"
)

// fakeGokrazy serves gokrazy's update endpoints on a unix socket, as
// gokrazy does on a box without a gokrazy password.
func fakeGokrazy(t *testing.T) (sock string, got chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ncpt-gk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "gokrazy-http.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got = make(chan string, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + r.URL.Path + " " + string(b)
		sum := sha256.Sum256(b)
		w.Write([]byte(hex.EncodeToString(sum[:])))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock, got
}

// An update reaches gokrazy only through statusd, with the password and
// from the box's own origin; everything else is refused before gokrazy
// hears of it.
func TestUpdateThroughStatusd(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	sock, got := fakeGokrazy(t)
	f.srv.GokrazySocket = sock
	send := func(method, path, body string, h map[string]string) *httpResult {
		r := newRequest(method, path, body, h)
		if n := h["Content-Length"]; n != "" {
			r.ContentLength, _ = strconv.ParseInt(n, 10, 64) // what the client claims
		}
		return f.do(r)
	}
	auth := map[string]string{"Authorization": goodAuth}
	r := send("PUT", "/api/v1/update/root", "new root image", auth)
	sum := sha256.Sum256([]byte("new root image"))
	if r.Code != 200 || r.Body != hex.EncodeToString(sum[:]) {
		t.Fatalf("PUT root = %d %q", r.Code, r.Body)
	}
	if g := <-got; g != "PUT /update/root new root image" {
		t.Fatalf("gokrazy got %q", g)
	}
	if r := send("POST", "/api/v1/update/testboot", "", auth); r.Code != 200 || <-got != "POST /update/testboot " {
		t.Fatalf("testboot = %d %s", r.Code, r.Body)
	}
	for _, tc := range []struct {
		name, method, path string
		headers            map[string]string
		code               int
		says               string
	}{
		{"no password", "PUT", "/api/v1/update/root", nil, 401, "authentication required"},
		{"gokrazy's user", "PUT", "/api/v1/update/root", map[string]string{"Authorization": basic("gokrazy", fixturePassword)}, 401, ""},
		{"cross-site", "POST", "/api/v1/update/switch", map[string]string{"Authorization": goodAuth, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "cross-site"},
		{"unknown step", "PUT", "/api/v1/update/divert", auth, 404, "no update step"},
		{"wrong method", "GET", "/api/v1/update/switch", auth, 405, "takes POST"},
		{"too big", "PUT", "/api/v1/update/boot", map[string]string{"Authorization": goodAuth, "Content-Length": "2000000000"}, 413, "at most"},
	} {
		r := send(tc.method, tc.path, "x", tc.headers)
		if r.Code != tc.code || !strings.Contains(r.Body, tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, r.Code, r.Body, tc.code, tc.says)
		}
	}
	select {
	case g := <-got:
		t.Fatalf("a refused request reached gokrazy: %q", g)
	default:
	}
	f.srv.GokrazySocket = filepath.Join(t.TempDir(), "none.sock")
	if r := send("POST", "/api/v1/update/switch", "", auth); r.Code != 502 || !strings.Contains(r.Body, "passing the update to gokrazy") {
		t.Errorf("without gokrazy = %d %s, want 502", r.Code, r.Body)
	}
	var steps []string
	for _, e := range f.events.Recent(0) {
		if e.Kind == events.KindControl && e.Fields["action"] == "update" {
			steps = append(steps, e.Fields["step"])
		}
	}
	if strings.Join(steps, ",") != "switch,testboot,root" {
		t.Errorf("update events for steps %v", steps)
	}
}
