package radius

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/ncpos/ncpos/internal/freeradiustest"
	"github.com/ncpos/ncpos/web/accounts"
)

// The users the test's FreeRADIUS knows, with the reply each gets.
const testUsers = `ada Cleartext-Password := "ada-radius-password"
	Class := "ncpos-admin"
otto Cleartext-Password := "otto-radius-password"
	Filter-Id := "ncpos-operator"
vera Cleartext-Password := "vera-radius-password"
	Class := "ncpos-viewer", Class += "printers"
nobody Cleartext-Password := "nobody-radius-password"
	Class := "printers"
`

const testSecret = "a-shared-radius-secret"

var testRoles = map[string]accounts.Role{"ncpos-admin": accounts.Admin, "ncpos-operator": accounts.Operator, "ncpos-viewer": accounts.Viewer}

// TestAgainstFreeRADIUS signs in against Debian's FreeRADIUS: each role
// from its Class or Filter-Id, no role and a wrong password refused, a
// stopped server not answering.
func TestAgainstFreeRADIUS(t *testing.T) {
	fr := freeradiustest.Start(t, testUsers, testSecret)
	c := &Client{Servers: []Server{{Addr: fr.Addr, Secret: testSecret}}, Timeout: time.Second, Retries: 1, Roles: testRoles, NASIdentifier: "fw1"}
	ctx := context.Background()
	for _, tc := range []struct {
		user, pw string
		role     accounts.Role
		err      error
		says     string
	}{
		{"ada", "ada-radius-password", accounts.Admin, nil, ""},
		{"otto", "otto-radius-password", accounts.Operator, nil, ""},
		{"vera", "vera-radius-password", accounts.Viewer, nil, ""},
		{"nobody", "nobody-radius-password", accounts.None, ErrRejected, `names no role of this box (Class/Filter-Id ["printers"])`},
		{"ada", "a-wrong-password", accounts.None, ErrRejected, ""},
		{"stranger", "whatever-password", accounts.None, ErrRejected, ""},
	} {
		start := time.Now()
		res, err := c.Authenticate(ctx, tc.user, tc.pw)
		took := time.Since(start)
		if !errors.Is(err, tc.err) || res.Role != tc.role || (tc.says != "" && !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s/%s: %+v, %v; want %v, %v %q", tc.user, tc.pw, res, err, tc.role, tc.err, tc.says)
		}
		t.Logf("%s: %v, %v in %v", tc.user, res.Role, err, took.Round(time.Microsecond))

	}

	// Every request carried a Message-Authenticator that FreeRADIUS
	// checked: its client entry requires one, and drops a request whose
	// does not match (as with the wrong secret below).
	signed := func() bool {
		out := fr.Log()
		return strings.Contains(out, "Sent Access-Accept") && strings.Count(out, "  Message-Authenticator = 0x") >= 6
	}
	for deadline := time.Now().Add(5 * time.Second); !signed() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // its log comes through a pipe, in its own time
	}
	if !signed() {
		t.Errorf("FreeRADIUS's log shows no Message-Authenticator for each of the 6 requests")
	}

	// A wrong secret: FreeRADIUS drops the request, or the answer fails
	// its authenticators; either way no server answered.
	wrong := *c
	wrong.Servers = []Server{{Addr: fr.Addr, Secret: "not-the-secret"}}
	wrong.Timeout = 300 * time.Millisecond
	if _, err := wrong.Authenticate(ctx, "ada", "ada-radius-password"); !errors.Is(err, ErrNoAnswer) {
		t.Errorf("a wrong secret: %v", err)
	}

	// The first server down, the second answers.
	dead := freeradiustest.FreeUDPPort(t)
	two := *c
	two.Servers = []Server{{Addr: fmt.Sprintf("127.0.0.1:%d", dead), Secret: testSecret}, {Addr: fr.Addr, Secret: testSecret}}
	two.Timeout = 200 * time.Millisecond
	start := time.Now()
	if res, err := two.Authenticate(ctx, "otto", "otto-radius-password"); err != nil || res.Role != accounts.Operator || res.Server != fr.Addr {
		t.Errorf("with the first server down: %+v, %v", res, err)
	}
	t.Logf("with the first server down (2 tries of 200 ms): %v", time.Since(start).Round(time.Millisecond))

	fr.Stop()
	start = time.Now()
	_, err := c.Authenticate(ctx, "ada", "ada-radius-password")
	if !errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrRejected) {
		t.Errorf("the server stopped: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the server stopped: %v to give up, want about 2 tries of 1 s", took)
	}
}

// TestMessageAuthenticator checks an answer's Message-Authenticator: the
// one computed over it with the request's authenticator passes, any
// other is refused.
func TestMessageAuthenticator(t *testing.T) {
	req := radius.New(radius.CodeAccessRequest, []byte(testSecret))
	if err := sign(req, req.Authenticator); err != nil {
		t.Fatal(err)
	}
	reply := req.Response(radius.CodeAccessAccept)
	rfc2865.Class_AddString(reply, "ncpos-admin")
	if err := verify(reply, req.Authenticator); err != nil {
		t.Errorf("an answer without one: %v", err)
	}
	if err := sign(reply, req.Authenticator); err != nil {
		t.Fatal(err)
	}
	if err := verify(reply, req.Authenticator); err != nil {
		t.Errorf("a good one: %v", err)
	}
	other := radius.New(radius.CodeAccessRequest, []byte(testSecret))
	if err := verify(reply, other.Authenticator); err == nil {
		t.Error("one made for another request passed")
	}
	rfc2865.Class_SetString(reply, "ncpos-viewer")
	if err := verify(reply, req.Authenticator); err == nil {
		t.Error("an answer changed after signing passed")
	}
}
