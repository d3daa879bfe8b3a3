package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/web"
	"github.com/ncpos/ncpos/web/change"
	"github.com/ncpos/ncpos/web/configapi"
	"github.com/ncpos/ncpos/web/monitor"
)

func TestWaves(t *testing.T) {
	for _, c := range []struct {
		spec string
		n    int
		want string
	}{
		{"1,25%,100%", 3, "[1 3]"},
		{"1,25%,100%", 10, "[1 3 10]"},
		{"1,25%,100%", 1, "[1]"},
		{"2,5", 5, "[2 5]"},
	} {
		w, err := Waves(c.spec, c.n)
		if err != nil || fmt.Sprint(w) != c.want {
			t.Errorf("Waves(%q, %d) = %v, %v; want %s", c.spec, c.n, w, err, c.want)
		}
	}
	for _, bad := range []string{"0", "1,x", "150%", "1,2"} {
		if _, err := Waves(bad, 5); err == nil {
			t.Errorf("Waves(%q, 5) accepted", bad)
		}
	}
}

// changeBox is a box serving the configuration API with the box's own
// code: statusd's server and a web/change manager whose forwarderd
// fails when fail is set.
func changeBox(t *testing.T, name, hash string, fail *bool) Box {
	t.Helper()
	dir := t.TempDir()
	run := filepath.Join(dir, "config.toml")
	text := "platform = \"generic\"\nservices = [\"forwarderd\"]\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\n"
	if err := os.WriteFile(run, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := versions.Open(filepath.Join(dir, "versions"), versions.DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("ncpos.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	pw, err := web.LoadPassword(config.Status{PasswordHash: hash}, filepath.Join(dir, "pw"))
	if err != nil {
		t.Fatal(err)
	}
	m := &change.Manager{Store: store, RunConfig: run, Takers: map[string]change.Taker{
		config.TakerForwarder: change.TakerFunc(func(context.Context) error {
			if *fail {
				return errors.New("port LAN3 not found")
			}
			return nil
		}),
		config.TakerBypass: change.TakerFunc(func(context.Context) error { return nil }),
	}}
	srv := &web.Server{Monitor: &monitor.Monitor{Collector: &monitor.Collector{Root: dir, RunDir: dir}, Config: cfg}, Auth: web.Auth{Password: pw},
		Configs: &configapi.Configs{InForce: func() ([]byte, error) { return os.ReadFile(run) }, Versions: store, Changes: m}}
	id, err := boxtls.Ensure(t.TempDir(), name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	return Box{Name: name, Address: hs.Listener.Addr().String(), Fingerprint: id.Fingerprint}
}

// TestApplyConfigInWaves: a configuration goes to one box, is watched
// and confirmed, then to the rest; a box that fails stops the rollout
// there, and the boxes after it are not touched.
func TestApplyConfigInWaves(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("fleet-password-1"), 10)
	if err != nil {
		t.Fatal(err)
	}
	fail := map[string]*bool{"b1": new(bool), "b2": new(bool), "b3": new(bool)}
	var boxes []Box
	for _, n := range []string{"b1", "b2", "b3"} {
		boxes = append(boxes, changeBox(t, n, string(h), fail[n]))
	}
	pins := map[string]string{}
	for _, b := range boxes {
		pins[b.Name] = b.Fingerprint
	}
	a := &Asker{
		TLS: func(b Box) *tls.Config {
			pin := &boxtls.Pin{Box: b.Name, Given: pins[b.Name]}
			return pin.TLSConfig()
		},
		Password: func(Box) string { return "fleet-password-1" },
	}
	next := "platform = \"generic\"\nservices = [\"forwarderd\"]\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\nmtu = 9000\n"
	ctx := context.Background()
	res, err := a.ApplyConfig(ctx, boxes, []int{1, 3}, ConfigChange{Text: next, Comment: "jumbo", Within: time.Minute, Watch: 100 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.State != "confirmed" || r.Version != 2 {
			t.Errorf("%s: %+v, want version 2 confirmed", r.Box, r)
		}
	}
	if res[0].Wave != 1 || res[1].Wave != 2 || res[2].Wave != 2 {
		t.Errorf("waves %d %d %d, want 1 2 2", res[0].Wave, res[1].Wave, res[2].Wave)
	}
	// Again: every box runs it already.
	res, err = a.ApplyConfig(ctx, boxes, []int{3}, ConfigChange{Text: next, Within: time.Minute, Watch: 10 * time.Millisecond})
	if err != nil || res[0].State != "unchanged" {
		t.Errorf("the same configuration again: %+v, %v", res, err)
	}
	// b2 cannot take the next one: the rollout stops at it, b3 keeps
	// what it has.
	*fail["b2"] = true
	next2 := strings.Replace(next, "mtu = 9000", "mtu = 4000", 1)
	res, err = a.ApplyConfig(ctx, boxes, []int{1, 2, 3}, ConfigChange{Text: next2, Within: time.Minute, Watch: 10 * time.Millisecond, Logf: t.Logf})
	if !errors.Is(err, errWaveFailed) || len(res) != 2 || res[0].State != "confirmed" || res[1].State != "" || !strings.Contains(res[1].Reason, "port LAN3 not found") {
		t.Errorf("a box that cannot take it: %+v, %v", res, err)
	}
	cur, err := a.client(boxes[2]).Config(ctx)
	if err != nil || !strings.Contains(cur.Text, "mtu = 9000") {
		t.Errorf("b3 after the stop: %v\n%s", err, cur.Text)
	}
}
