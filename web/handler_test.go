package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/sysinfo"
)

func fakeRoot(t *testing.T) (root, run string) {
	t.Helper()
	root, run = t.TempDir(), t.TempDir()
	files := map[string]string{
		"proc/version":                 "Linux version 6.12.0-ncpos (ncpos@ncpos)\n",
		"proc/cmdline":                 "console=ttyS0,115200 root=PARTUUID=2a1b3c4d-02 ro\n",
		"proc/uptime":                  "61.5 100.0\n",
		"proc/mounts":                  "/dev/root / squashfs ro,relatime 0 0\n/dev/vda4 /perm ext4 rw,relatime 0 0\n",
		"proc/diskstats":               "253 0 vda 1 0 2 3 4 0 10 0 0 0 0\n",
		"sys/class/net/eth0/address":   "52:54:00:12:34:56\n",
		"sys/class/net/eth0/operstate": "up\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec := &sysinfo.InitRecord{BuildID: "test-build-7", ManagementPort: "MGMT", Ports: map[string]string{"MGMT": "eth0"}}
	rec.Config.Source = "/etc/ncpos/ncpos.toml"
	if err := sysinfo.WriteInitRecord(run, rec); err != nil {
		t.Fatal(err)
	}
	return root, run
}

func TestHandler(t *testing.T) {
	root, run := fakeRoot(t)
	h := NewHandler(&Collector{Root: root, RunDir: run})

	get := func(method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec
	}

	if r := get("GET", "/healthz"); r.Code != 200 || strings.TrimSpace(r.Body.String()) != "ok" {
		t.Fatalf("/healthz = %d %q", r.Code, r.Body.String())
	}

	r := get("GET", "/api/v1/system")
	if r.Code != 200 {
		t.Fatalf("/api/v1/system = %d: %s", r.Code, r.Body.String())
	}
	var s System
	if err := json.Unmarshal(r.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.BuildID != "test-build-7" || s.Root.FSType != "squashfs" || !s.Root.ReadOnly() {
		t.Fatalf("system = %+v", s)
	}
	if s.Perm == nil || s.Perm.FSType != "ext4" {
		t.Fatalf("perm = %+v, want ext4", s.Perm)
	}
	if len(s.Interfaces) != 1 || s.Interfaces[0].Port != "MGMT" {
		t.Fatalf("interfaces = %+v, want eth0 as MGMT", s.Interfaces)
	}
	if s.UptimeSeconds != 61.5 {
		t.Fatalf("uptime = %v", s.UptimeSeconds)
	}

	page := get("GET", "/")
	if page.Code != 200 || !strings.Contains(page.Body.String(), "test-build-7") || !strings.Contains(page.Body.String(), "read-only") {
		t.Fatalf("status page = %d:\n%s", page.Code, page.Body.String())
	}
	if r := get("POST", "/api/v1/system"); r.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /api/v1/system = %d, want 405", r.Code)
	}
	if r := get("GET", "/nope"); r.Code != http.StatusNotFound {
		t.Fatalf("GET /nope = %d, want 404", r.Code)
	}
}
