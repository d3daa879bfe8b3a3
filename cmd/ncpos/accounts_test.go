package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/web"
	"github.com/ncpos/ncpos/web/monitor"
)

// accountsBox serves a real statusd API with its accounts over HTTPS and
// returns the flags that reach it, without the credentials.
func accountsBox(t *testing.T, boxPW string) (flags []string, evs *events.Log) {
	t.Helper()
	dir := t.TempDir()
	h, err := passwd.Hash(boxPW)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := web.LoadPassword(config.Status{PasswordHash: string(h)}, filepath.Join(dir, "pw"))
	if err != nil {
		t.Fatal(err)
	}
	evs = events.NewLog(0)
	srv := &web.Server{Monitor: &monitor.Monitor{Collector: &monitor.Collector{Root: dir, RunDir: dir}, Events: evs}, Auth: web.Auth{Password: pw}}
	if err := srv.Auth.LoadAccounts(filepath.Join(dir, "accounts.json")); err != nil {
		t.Fatal(err)
	}
	id, err := boxtls.Ensure(t.TempDir(), "fw1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{id.Cert}}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	host, port, _ := net.SplitHostPort(hs.Listener.Addr().String())
	return []string{"-host", host, "-status-port", port, "-fingerprint", id.Fingerprint, "-known", filepath.Join(dir, "known")}, evs
}

// TestUserAndTokenCommands runs ncpos user and ncpos token against a real
// statusd API: an admin adds a viewer, gives it a token, and each signs
// in as itself.
func TestUserAndTokenCommands(t *testing.T) {
	const boxPW = "fw1-control-password"
	box, evs := accountsBox(t, boxPW)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content+"\n"), 0o600)
		return p
	}
	admin := append([]string{"-password-file", file("admin", boxPW)}, box...)
	run := func(f func(context.Context, []string, *bytes.Buffer) error, args ...string) (string, error) {
		var out bytes.Buffer
		err := f(context.Background(), args, &out)
		return out.String(), err
	}
	user := func(args ...string) (string, error) {
		return run(func(ctx context.Context, a []string, b *bytes.Buffer) error { return runUserTo(ctx, a, b) }, args...)
	}
	token := func(args ...string) (string, error) {
		return run(func(ctx context.Context, a []string, b *bytes.Buffer) error { return runTokenTo(ctx, a, b) }, args...)
	}
	with := func(sub string, common []string, extra ...string) []string {
		return append(append([]string{sub}, common...), extra...)
	}

	out, err := user(with("add", admin, "-name", "vera", "-role", "viewer", "-new-password-file", file("vera", "vera-long-password"))...)
	if err != nil || out != "vera: added as viewer\n" {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	out, err = user(with("add", admin, "-name", "otto", "-role", "operator")...)
	if err != nil || !strings.Contains(out, "password (shown once): ") {
		t.Fatalf("user add with a random password: %v\n%s", err, out)
	}
	if _, err := user(with("add", admin, "-name", "vera", "-role", "viewer")...); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("adding vera twice: %v", err)
	}
	out, err = user(with("list", admin)...)
	if err != nil || !strings.Contains(out, "ncpos  admin     enabled  box") || !strings.Contains(out, "vera   viewer    enabled  own") {
		t.Errorf("user list: %v\n%s", err, out)
	}

	// vera signs in as herself: a viewer lists no accounts.
	vera := append([]string{"-user", "vera", "-password-file", file("vera-in", "vera-long-password")}, box...)
	if _, err := user(with("list", vera)...); err == nil || !strings.Contains(err.Error(), "this needs the admin role: vera is a viewer") {
		t.Errorf("user list as vera: %v", err)
	}
	if _, err := user(with("list", append([]string{"-user", "vera"}, box...))...); err == nil || !strings.Contains(err.Error(), "-password-file") {
		t.Errorf("-user without a password: %v", err)
	}

	secret := filepath.Join(dir, "prometheus.token")
	out, err = token(with("create", admin, "-account", "vera", "-name", "prometheus", "-role", "viewer", "-expires", "720h", "-o", secret)...)
	if err != nil || !strings.Contains(out, "token prometheus of vera (viewer, expires ") {
		t.Fatalf("token create: %v\n%s", err, out)
	}
	if st, err := os.Stat(secret); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the token's file: %v %v", st, err)
	}
	if _, err := token(with("create", admin, "-account", "vera", "-name", "too-high", "-role", "operator")...); err == nil || !strings.Contains(err.Error(), "at most viewer") {
		t.Errorf("an operator token for a viewer: %v", err)
	}
	byToken := append([]string{"-token-file", secret}, box...)
	if _, err := token(with("list", byToken)...); err == nil || !strings.Contains(err.Error(), "vera/prometheus is a viewer") {
		t.Errorf("token list with a viewer token: %v", err)
	}
	out, err = token(with("list", admin)...)
	if err != nil || !strings.Contains(out, "prometheus  vera     viewer") || strings.Contains(out, "never") {
		t.Errorf("token list (used once): %v\n%s", err, out)
	}
	if out, err := token(with("revoke", admin, "-name", "prometheus")...); err != nil || out != "token prometheus revoked\n" {
		t.Errorf("token revoke: %v %s", err, out)
	}
	if _, err := token(with("list", byToken)...); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a revoked token: %v", err)
	}

	for _, args := range [][]string{
		with("role", admin, "-name", "vera", "-role", "operator"),
		with("passwd", admin, "-name", "vera", "-new-password-file", file("vera2", "vera-second-password")),
		with("disable", admin, "-name", "vera"),
	} {
		if out, err := user(args...); err != nil {
			t.Errorf("user %s: %v\n%s", args[0], err, out)
		}
	}
	if _, err := user(with("list", vera)...); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a disabled account: %v", err)
	}
	if _, err := user(with("remove", admin, "-name", "ncpos")...); err == nil || !strings.Contains(err.Error(), "409 Conflict: at least one enabled admin must remain") {
		t.Errorf("removing the last admin: %v", err)
	}
	for _, e := range []string{"account vera added as a viewer by ncpos@127.0.0.1", "token prometheus of vera revoked by ncpos@127.0.0.1", "account vera disabled by ncpos@127.0.0.1"} {
		found := false
		for _, ev := range evs.Recent(100) {
			found = found || strings.Contains(ev.Message, e)
		}
		if !found {
			t.Errorf("no event %q", e)
		}
	}
}
