package update

import (
	"context"
	"crypto/tls"
	"errors"
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

	second := fakeBox(t, &other) // same name, another key
	c = &Client{StatusURL: second.URL + "/", TLS: (&boxtls.Pin{Box: "fw1", Known: known}).TLSConfig()}
	start := time.Now()
	_, err := Run(context.Background(), c, nil, Options{})
	var mm *boxtls.MismatchError
	if !errors.As(err, &mm) || !strings.Contains(err.Error(), "-fingerprint "+mm.Got) {
		t.Fatalf("update of a box with another key: %v, want refused with what to do", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the refusal took %v: a changed key is not worth retrying", d)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("%d requests beyond /api/v1/system reached a box with a changed key", n)
	}
}
