package web

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/ncpos/ncpos/config"
)

// TestServerReconfigure: read authentication, the control password, the
// names the box answers to and the segments shown change in place; a
// configuration that would leave the box without a password is refused
// whole.
func TestServerReconfigure(t *testing.T) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	if r := f.do(newRequest("GET", "/api/v1/status", "", nil)); r.Code != 200 {
		t.Fatalf("reading without auth_read: %d", r.Code)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("a-new-password-7"), 10)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(fixtureConfig, "[[segment]]\nname = \"seg2\"\nports = [\"LAN3\", \"LAN4\"]\nbypass = \"pair2\"\n", "", 1) +
		"[status]\nauth_read = true\nnames = [\"edge.example\"]\npassword_hash = \"" + string(hash) + "\"\n"
	cfg, err := config.Parse("ncpos.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	newAuth := map[string]string{"Authorization": basic("ncpos", "a-new-password-7")}
	for _, c := range []struct {
		what string
		host string
		hdr  map[string]string
		want int
	}{
		{"without the password", "edge.example", nil, 401},
		{"with the old password", "edge.example", map[string]string{"Authorization": goodAuth}, 401},
		{"with the new password", "edge.example", newAuth, 200},
		{"for a name no longer given", "appliance.test", newAuth, 421},
	} {
		req := newRequest("GET", "/api/v1/status", "", c.hdr)
		req.Host = c.host
		if r := f.do(req); r.Code != c.want {
			t.Errorf("reading %s, host %s: %d, want %d", c.what, c.host, r.Code, c.want)
		}
	}
	snap := f.mon.Step(context.Background())
	var segs []string
	for _, s := range snap.Segments {
		segs = append(segs, s.Name)
	}
	if strings.Join(segs, ",") != "seg1" {
		t.Errorf("segments shown: %v, want seg1 alone", segs)
	}
	// Without a password in the configuration the box falls back to its
	// file, which this one lacks: refused, and the new password stays.
	bare, err := config.Parse("ncpos.toml", []byte(fixtureConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Reconfigure(bare); err == nil || !strings.Contains(err.Error(), "control password") {
		t.Errorf("a configuration leaving no password: %v", err)
	}
	req := newRequest("GET", "/api/v1/status", "", newAuth)
	req.Host = "edge.example"
	if r := f.do(req); r.Code != 200 {
		t.Errorf("after the refusal, the new password: %d", r.Code)
	}
}
