package update

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
)

// fakeBox answers /api/v1/system over HTTPS with a key of its own and
// counts every other request (an update would start with them).
func fakeBox(t *testing.T, other *atomic.Int32) *httptest.Server {
	return fakeBoxCounting(t, other, new(atomic.Int32))
}

// fakeBoxCounting is fakeBox that counts the connections made to it.
func fakeBoxCounting(t *testing.T, other, connections *atomic.Int32) *httptest.Server {
	t.Helper()
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/system" {
			w.Write([]byte(`{"build_id":"a","cmdline":"root=PARTUUID=12345678-02"}`))
			return
		}
		other.Add(1)
		http.Error(w, "not here", 404)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			connections.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// An update reaches the box only over HTTPS with the key pinned on first
// contact; a box that presents another key is refused at once, before
// anything is sent to it.
func TestUpdateRefusesChangedKey(t *testing.T) {
	known := &boxtls.Known{Path: filepath.Join(t.TempDir(), "known_boxes")}
	var other atomic.Int32
	first := fakeBox(t, &other)
	c := &Client{StatusURL: first.URL + "/", TLS: (&boxtls.Pin{Box: "fw1", Known: known}).TLSConfig()}
	if sys, err := c.System(context.Background()); err != nil || sys.BuildID != "a" {
		t.Fatalf("first contact: %+v %v", sys, err)
	}

	var connections atomic.Int32
	second := fakeBoxCounting(t, &other, &connections) // same name, another key
	c = &Client{StatusURL: second.URL + "/", TLS: (&boxtls.Pin{Box: "fw1", Known: known}).TLSConfig()}
	_, err := Run(context.Background(), c, nil, Options{})
	var mm *boxtls.MismatchError
	if !errors.As(err, &mm) || !strings.Contains(err.Error(), "-fingerprint "+mm.Got) {
		t.Fatalf("update of a box with another key: %v, want refused with what to do", err)
	}
	if n := connections.Load(); n != 1 {
		t.Errorf("%d connections to the box with a changed key, want 1: a changed key is not worth retrying", n)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("%d requests beyond /api/v1/system reached a box with a changed key", n)
	}
}
