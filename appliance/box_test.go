package appliance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/appliance/initapi"
)

// TestBoxReconfigure asks init's socket handler to take the configuration
// again: a file that does not load is refused with its error, and one
// that keeps the hostname answers with the box's settings.
func TestBoxReconfigure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	b := &box{config: path}
	post := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		b.handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/reconfigure", nil))
		return w
	}
	os.WriteFile(path, []byte("hostname = 7\n"), 0o644)
	if w := post(); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "hostname") {
		t.Errorf("a configuration that does not load: %d %q, want 422 naming hostname", w.Code, w.Body)
	}
	host, _ := os.Hostname()
	os.WriteFile(path, []byte("hostname = \""+host+"\"\n[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\n"), 0o644)
	w := post()
	var got initapi.Reconfigured
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != http.StatusOK || err != nil || got.Hostname != host {
		t.Errorf("the hostname it has: %d %q (%v), want 200 with hostname %q", w.Code, w.Body, err, host)
	}
}
