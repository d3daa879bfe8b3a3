package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClient reads and posts through a stand-in statusd: the password
// goes as Basic credentials, a request's body as JSON, and a refusal
// comes back as a *StatusError with statusd's message.
func TestClient(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/system", func(w http.ResponseWriter, r *http.Request) {
		if _, pw, _ := r.BasicAuth(); pw != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error": "authentication required"}`))
			return
		}
		w.Write([]byte(`{"build_id": "b1", "uptime_seconds": 3}`))
	})
	mux.HandleFunc("POST /api/v1/control/reboot", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want JSON", http.StatusUnsupportedMediaType)
			return
		}
		body := new(strings.Builder)
		if _, err := io.Copy(body, r.Body); err != nil || !strings.Contains(body.String(), `"reason":"maintenance"`) {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error": "reason is required"}`))
			return
		}
		w.Write([]byte(`{}`))
	})
	mux.HandleFunc("PUT /api/v1/update/root", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(b)) || len(b) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error": "an empty image"}`))
			return
		}
		w.Write([]byte("wrote " + string(b)))
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	ctx := context.Background()

	c := &Client{URL: srv.URL + "/", Password: "secret", HTTP: srv.Client()}
	var s System
	if err := c.Get(ctx, "api/v1/system", &s); err != nil || s.BuildID != "b1" {
		t.Errorf("Get system = %+v, %v", s, err)
	}
	if err := c.Post(ctx, "api/v1/control/reboot", RebootRequest{Reason: "maintenance"}, nil); err != nil {
		t.Errorf("Post reboot: %v", err)
	}
	var se *StatusError
	err := c.Post(ctx, "api/v1/control/reboot", RebootRequest{}, nil)
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || se.Message != "reason is required" {
		t.Errorf("Post without a reason: %v, want a 400 saying the reason is required", err)
	}
	wrong := &Client{URL: srv.URL + "/", Password: "guess", HTTP: srv.Client()}
	if err := wrong.Get(ctx, "api/v1/system", &s); !errors.As(err, &se) || se.Code != http.StatusUnauthorized || !strings.Contains(err.Error(), "GET api/v1/system: 401") {
		t.Errorf("Get with a wrong password: %v, want a 401 naming the path", err)
	}
	if got, err := c.Send(ctx, http.MethodPut, "api/v1/update/root", strings.NewReader("abc"), 3); err != nil || got != "wrote abc" {
		t.Errorf("Send = %q, %v", got, err)
	}
	if _, err := c.Send(ctx, http.MethodPut, "api/v1/update/root", strings.NewReader(""), 0); !errors.As(err, &se) || se.Message != "an empty image" {
		t.Errorf("Send of nothing: %v, want statusd's refusal", err)
	}
	cs, err := c.Call(ctx, http.MethodGet, "api/v1/system", nil, nil)
	if err != nil || cs == nil || len(cs.PeerCertificates) == 0 {
		t.Errorf("Call: TLS state %v, %v; want the box's certificate", cs, err)
	}
}
