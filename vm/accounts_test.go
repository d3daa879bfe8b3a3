package vm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/browsertest"
	"github.com/ncpos/ncpos/internal/freeradiustest"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/web/api"
)

// The team's RADIUS server as the accounts test runs it: the box's own
// admin is known there too, with the role it has on the box.
const (
	boxRADIUSSecret = "campus-radius-secret"
	boxRADIUSUsers  = `ncpos Cleartext-Password := "` + testPassword + `"
	Class := "ncpos-admin"
sec Cleartext-Password := "sec-radius-password"
	Class := "ncpos-admin"
tech Cleartext-Password := "tech-radius-password"
	Filter-Id := "ncpos-operator"
noc Cleartext-Password := "noc-radius-password"
	Class := "ncpos-viewer"
guest Cleartext-Password := "guest-radius-password"
`
)

// accountsConfig is a box whose logins ask the RADIUS server at radius
// (host:port as the guest reaches it); reading needs a viewer, the
// default.
func accountsConfig(radius string) []byte {
	return []byte(fmt.Sprintf(`platform = "qemu"
hostname = "ncpos-accounts"
services = ["bypassd", "watchdogd", "statusd"]

[watchdog]
boot_grace = "3600s"

[[segment]]
name = "seg1"
ports = ["LAN1", "LAN2"]
bypass = "pair1"

[auth]
radius = [{server = %q, secret = %q}]
radius_timeout = "2s"
radius_retries = 1
`, radius, boxRADIUSSecret))
}

// TestAccountsOnBox runs a booted box whose logins ask Debian's
// FreeRADIUS on the host: each role does what it may through the host
// commands and gets 403 for what it may not; a viewer sees no control
// in the dashboard; Prometheus scrapes /metrics with a viewer token and
// not without it; the audit names every action; and a local account
// signs in only once the RADIUS server stopped answering, which is
// logged.
func TestAccountsOnBox(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	fr := freeradiustest.Start(t, boxRADIUSUsers, boxRADIUSSecret)
	_, port, _ := net.SplitHostPort(fr.Addr)
	// QEMU's user network takes the guest's 10.0.2.2 to the host's
	// loopback.
	img := testImage(t, "accounts", accountsConfig("10.0.2.2:"+port))
	v, _ := boot(t, img, false)
	checkBooted(t, v)

	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fpr, err := v.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	box := []string{"-host", "127.0.0.1", "-status-port", strconv.Itoa(v.Options.StatusPort), "-fingerprint", fpr, "-known", filepath.Join(dir, "known_boxes")}
	as := func(user, pw string) []string {
		return append([]string{"-user", user, "-password-file", file(user+".pw", pw)}, box...)
	}
	ncpos := func(args ...string) (string, error) {
		cmd := exec.Command(ncposCommand(t), args...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		err := cmd.Run()
		return out.String(), err
	}
	run := func(sub, verb string, creds []string, extra ...string) (string, error) {
		return ncpos(append(append([]string{sub, verb}, creds...), extra...)...)
	}

	// Each role, as the RADIUS server gives it.
	admin, operator, viewer := as("sec", "sec-radius-password"), as("tech", "tech-radius-password"), as("noc", "noc-radius-password")
	client := func(user, pw string) *api.Client {
		return &api.Client{URL: v.StatusURL(), User: user, Password: pw, HTTP: v.Client(30 * time.Second)}
	}
	ctx := context.Background()
	// What a login costs here: the first asks the RADIUS server on the
	// host (through QEMU's user network), the next is remembered.
	var who api.Whoami
	timed := func() time.Duration {
		start := time.Now()
		if err := client("noc", "noc-radius-password").Get(ctx, "api/v1/whoami", &who); err != nil || who != (api.Whoami{Name: "noc", Role: "viewer", Method: "radius"}) {
			t.Errorf("whoami as noc: %+v, %v", who, err)
		}
		return time.Since(start)
	}
	first, again := timed(), timed()
	t.Logf("a request as noc, over a fresh TLS connection: %v with the RADIUS round trip, %v remembered",
		first.Round(time.Millisecond), again.Round(time.Millisecond))
	if out, err := run("config", "get", viewer); err == nil || !strings.Contains(out, "this needs the admin role: noc is a viewer") {
		t.Errorf("ncpos config get as noc: %v\n%s", err, out)
	}
	if out, err := run("config", "get", operator); err == nil || !strings.Contains(out, "this needs the admin role: tech is an operator") {
		t.Errorf("ncpos config get as tech: %v\n%s", err, out)
	}
	out, err := run("config", "get", admin)
	if err != nil || !strings.Contains(out, "[auth]") || strings.Contains(out, boxRADIUSSecret) || !strings.Contains(out, config.RedactedSecret) {
		t.Errorf("ncpos config get as sec (the secret must not show): %v\n%s", err, out)
	}
	if out, err := run("user", "list", as("guest", "guest-radius-password")); err == nil || !strings.Contains(out, "401") {
		t.Errorf("a RADIUS user without a role: %v\n%s", err, out)
	}
	bypass := api.BypassRequest{Segment: "seg1", State: "bypass", Reason: "accounts test", ExpiresIn: "10m"}
	var se *api.StatusError
	if err := client("noc", "noc-radius-password").Post(ctx, "api/v1/control/bypass", bypass, nil); !errors.As(err, &se) || se.Code != 403 {
		t.Errorf("a viewer forcing bypass: %v", err)
	}
	if err := client("tech", "tech-radius-password").Post(ctx, "api/v1/control/bypass", bypass, nil); err != nil {
		t.Errorf("an operator forcing bypass: %v", err)
	}

	// A local viewer for Prometheus, and its token.
	const localPW = "prometheus-local-password"
	if out, err := run("user", "add", admin, "-name", "prometheus", "-role", "viewer", "-new-password-file", file("new.pw", localPW)); err != nil {
		t.Fatalf("ncpos user add: %v\n%s", err, out)
	}
	// While the RADIUS server answers, it decides: it does not know the
	// local account, and that is final.
	if err := client("prometheus", localPW).Get(ctx, "api/v1/whoami", &who); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("a local account while RADIUS answers: %v", err)
	}
	token := filepath.Join(dir, "scrape.token")
	if out, err := run("token", "create", admin, "-account", "prometheus", "-name", "scrape", "-role", "viewer", "-expires", "24h", "-o", token); err != nil {
		t.Fatalf("ncpos token create: %v\n%s", err, out)
	}
	if out, err := run("token", "create", admin, "-account", "prometheus", "-name", "too-high", "-role", "operator"); err == nil || !strings.Contains(out, "at most viewer") {
		t.Errorf("an operator token for a viewer: %v\n%s", err, out)
	}
	scrapeWithToken(t, v, token)

	t.Run("the dashboard as a viewer", func(t *testing.T) {
		spki, err := boxtls.SPKIBase64(boxCertificate(t, v).Raw)
		if err != nil {
			t.Fatal(err)
		}
		b := browsertest.Start(t, browsertest.Options{TrustSPKI: spki, Headers: map[string]string{"Authorization": basicAuth("noc", "noc-radius-password")}})
		const ready = `polled >= 1 && document.getElementById('whoami').textContent === 'signed in as noc (viewer, radius)'`
		if _, err := b.Load(v.StatusURL(), ready, 4*time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := b.Eval(`(() => [...document.querySelectorAll('button')].filter((e) => e.offsetParent !== null).map((e) => e.id).join(' '))()`, 30*time.Second)
		if err != nil || got != "c-signin c-rotate" {
			t.Errorf("the viewer sees the buttons %q (%v), want only c-signin c-rotate", got, err)
		}
		t.Logf("noc (viewer) sees the buttons: %s", got)
	})

	// The audit names each action: who, how, the role, the result.
	var audit struct{ Audit []api.AuditEntry }
	if err := client("sec", "sec-radius-password").Get(ctx, "api/v1/audit", &audit); err != nil {
		t.Fatal(err)
	}
	for _, want := range []api.AuditEntry{
		{Name: "noc", Method: "radius", Role: "viewer", Action: "GET /api/v1/config", Status: 403},
		{Name: "tech", Method: "radius", Role: "operator", Action: "POST /api/v1/control/bypass", Status: 200, Result: "ok"},
		{Name: "sec", Method: "radius", Role: "admin", Action: "GET /api/v1/config", Status: 200, Result: "ok"},
		{Name: "sec", Method: "radius", Role: "admin", Action: "POST /api/v1/tokens", Status: 200, Result: "ok"},
		{Name: "guest", Method: "password", Action: "GET /api/v1/accounts", Status: 401},
	} {
		found := false
		for _, e := range audit.Audit {
			if e.Name == want.Name && e.Method == want.Method && e.Role == want.Role && e.Action == want.Action && e.Status == want.Status &&
				(want.Result == "" || e.Result == want.Result) && e.From != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("the audit lacks %+v:\n%+v", want, audit.Audit)
		}
	}

	// The RADIUS server goes away: the local accounts sign in once no
	// server answers, and the box says so.
	fr.Stop()
	start := time.Now()
	local := client("prometheus", localPW)
	if err := local.Get(ctx, "api/v1/whoami", &who); err != nil || who != (api.Whoami{Name: "prometheus", Role: "viewer", Method: "password"}) {
		t.Errorf("the local viewer with the RADIUS server stopped: %+v, %v", who, err)
	}
	t.Logf("the first login with the RADIUS server stopped, then local: %v (2 tries of 2 s)", time.Since(start).Round(time.Millisecond))
	var evs struct{ Events []api.Event }
	if err := local.Get(ctx, "api/v1/events?limit=100", &evs); err != nil {
		t.Fatal(err)
	}
	var fell, noAnswer bool
	for _, e := range evs.Events {
		fell = fell || strings.Contains(e.Message, "prometheus signed in with its local password: no RADIUS server answers")
		noAnswer = noAnswer || strings.Contains(e.Message, "no RADIUS server answered")
	}
	if !fell || !noAnswer {
		t.Errorf("the fallback is not logged (no answer %v, fell back %v)", noAnswer, fell)
	}
}

func basicAuth(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// scrapeWithToken has Debian's Prometheus scrape the box's /metrics with
// the viewer token in file, and the same without it: the first is up,
// the second refused.
func scrapeWithToken(t *testing.T, v *VM, token string) {
	t.Helper()
	bin := testenv.LookPath(t, testenv.Tools, "prometheus", "prometheus")
	dir := t.TempDir()
	ca := filepath.Join(dir, "box.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: boxCertificate(t, v).Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	target := strings.TrimSuffix(strings.TrimPrefix(v.StatusURL(), "https://"), "/")
	job := func(name, auth string) string {
		return fmt.Sprintf(`  - job_name: %s
    scheme: https
    tls_config: {ca_file: %q, server_name: %q}
%s    static_configs: [{targets: [%q]}]
`, name, ca, boxtls.FleetName, auth, target)
	}
	cfg := "global: {scrape_interval: 2s}\nscrape_configs:\n" +
		job("ncpos", fmt.Sprintf("    authorization: {type: Bearer, credentials_file: %q}\n", token)) + job("anonymous", "")
	p := servePrometheus(t, bin, dir, cfg)
	for deadline := time.Now().Add(v.Within(90 * time.Second)); ; time.Sleep(2 * time.Second) {
		up := map[string]string{}
		for _, s := range p.query(t, "up") {
			up[s.Labels["job"]] = s.Value
		}
		builds := p.query(t, `ncpos_build_info{job="ncpos"}`)
		if up["ncpos"] == "1" && up["anonymous"] == "0" && len(builds) == 1 {
			t.Logf("Prometheus scrapes /metrics with the viewer token (up 1, build %s); without it, up 0", builds[0].Labels["build_id"])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: up %v, builds %v; want the token's job up and the anonymous one down", up, builds)
		}
	}
}
