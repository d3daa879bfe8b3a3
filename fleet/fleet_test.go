package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/web/api"
)

// Commands that change the inventory at once all land, and the file is
// valid JSON after each.
func TestInventoryConcurrentUpdates(t *testing.T) {
	inv := &Inventory{Path: filepath.Join(t.TempDir(), "ncpos", "fleet.json")}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			name := []string{"box-a", "box-b"}[i%2]
			if err := inv.Update(name, func(b *Box) { b.Build += "x" }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	boxes, err := inv.Boxes()
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 2 || boxes[0].Name != "box-a" || boxes[0].Build != "xxxxxxxxxx" || boxes[1].Build != "xxxxxxxxxx" {
		t.Fatalf("boxes %+v, want 10 updates of each", boxes)
	}
	if err := inv.Remove("box-a"); err != nil {
		t.Fatal(err)
	}
	if err := inv.Remove("box-a"); err == nil || !strings.Contains(err.Error(), `no box "box-a"`) {
		t.Fatalf("removing a missing box: %v", err)
	}
	if err := inv.Update("bad name", func(*Box) {}); err == nil {
		t.Fatal("a name with a space was taken")
	}
	os.WriteFile(inv.Path, []byte(`{"boxes": [`), 0o600)
	if _, err := inv.Boxes(); err == nil || !strings.Contains(err.Error(), inv.Path) {
		t.Fatalf("a damaged inventory read as %v, want an error naming it", err)
	}
	if err := inv.Update("box-c", func(*Box) {}); err == nil {
		t.Fatal("a damaged inventory was overwritten")
	}
}

// fakeBox serves a status like statusd's over HTTPS with a box identity
// made as a box makes it.
func fakeBox(t *testing.T, name string, st *api.Snapshot) (*httptest.Server, *boxtls.Identity) {
	t.Helper()
	id, err := boxtls.Ensure(t.TempDir(), name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/status" {
			http.NotFound(w, r)
			return
		}
		if u, p, ok := r.BasicAuth(); st == nil && (!ok || u != "ncpos" || p != "right") {
			http.Error(w, "unauthorized: this box needs its password to be read", http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(st)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, id
}

func TestStatusAndServiceDiscovery(t *testing.T) {
	st := &api.Snapshot{
		Summary: api.Summary{State: "bypass", Problems: []string{"seg2 in bypass: link down"}},
		System: &api.System{BuildID: "build-7", UptimeSeconds: 3600, Watchdog: api.WatchdogInfo{
			Petter: &api.Petter{LastReset: api.LastReset{Kind: "watchdog", Text: "watchdog (forwarderd liveness failing)"}}}},
		Segments: []api.Segment{
			{Name: "seg1", BypassPair: "pair1", Bypass: &api.BypassState{State: "normal"}, Forwarding: &api.SegmentForwarding{Healthy: true}},
			{Name: "seg2", BypassPair: "pair2", Bypass: &api.BypassState{State: "bypass"}, Forwarding: &api.SegmentForwarding{}},
		},
	}
	one, oneID := fakeBox(t, "box-one", st)
	two, _ := fakeBox(t, "box-two", nil) // auth_read: needs the password
	dir := t.TempDir()
	inv := &Inventory{Path: filepath.Join(dir, "fleet.json")}
	known := &boxtls.Known{Path: filepath.Join(dir, "known_boxes")}
	for name, addr := range map[string]string{"box-one": one.Listener.Addr().String(), "box-two": two.Listener.Addr().String(), "box-new": ""} {
		if err := inv.Update(name, func(b *Box) { b.Address = addr }); err != nil {
			t.Fatal(err)
		}
	}
	// box-two is pinned to another key: it must be refused.
	if err := known.Set("box-two", oneID.Fingerprint); err != nil {
		t.Fatal(err)
	}
	a := &Asker{
		TLS:      func(b Box) *tls.Config { return (&boxtls.Pin{Box: b.Name, Known: known}).TLSConfig() },
		Password: func(b Box) string { return map[string]string{"box-two": "right"}[b.Name] },
	}
	reports, err := a.Status(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Report{}
	for _, r := range reports {
		byName[r.Box.Name] = r
	}
	r1 := byName["box-one"]
	if !r1.Reachable || r1.Build != "build-7" || r1.Health != "bypass" || r1.LastReset != "watchdog (forwarderd liveness failing)" ||
		len(r1.Segments) != 2 || r1.Segments[0] != (SegmentReport{"seg1", "normal", true}) || r1.Segments[1] != (SegmentReport{"seg2", "bypass", false}) {
		t.Fatalf("box-one: %+v", r1)
	}
	if r := byName["box-two"]; r.Reachable || !strings.Contains(r.Error, "presented the key") {
		t.Fatalf("box-two with a changed key: %+v, want refused", r)
	}
	if r := byName["box-new"]; r.Reachable || !strings.Contains(r.Error, "no address yet") {
		t.Fatalf("box-new: %+v", r)
	}
	b1, _, _ := inv.Get("box-one")
	if b1.Fingerprint != oneID.Fingerprint || b1.Build != "build-7" || b1.Seen.IsZero() || !strings.HasPrefix(b1.Certificate, "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("box-one recorded as %+v", b1)
	}

	// Service discovery: only box-one has what Prometheus needs, and
	// its certificate checks under the fleet name with the CA file, as
	// Prometheus checks it; another box's certificate does not.
	ex, err := ExportSD(inv, filepath.Join(dir, "sd"))
	if err != nil {
		t.Fatal(err)
	}
	if ex.Boxes != 1 || len(ex.Skipped) != 2 {
		t.Fatalf("export %+v, want box-one in, the other two skipped", ex)
	}
	var groups []Group
	b, _ := os.ReadFile(ex.Targets)
	if err := json.Unmarshal(b, &groups); err != nil || len(groups) != 1 || groups[0].Targets[0] != one.Listener.Addr().String() ||
		groups[0].Labels["box"] != "box-one" || groups[0].Labels["build"] != "build-7" {
		t.Fatalf("targets %s (%v)", b, err)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(ex.CA)
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA file holds no certificate")
	}
	check := func(addr string) error {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: boxtls.FleetName})
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := check(one.Listener.Addr().String()); err != nil {
		t.Fatalf("box-one does not pass Prometheus' check with the exported CA file: %v", err)
	}
	if err := check(two.Listener.Addr().String()); err == nil {
		t.Fatal("a box whose certificate is not in the CA file passed the check")
	}
}
