package web

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/pcapfilter"
	"github.com/ncpos/ncpos/pcapng"
)

// fakeCapture is forwarderd's GET /capture as the fixture plays it: it
// checks the request as forwarderd does (the same parser, the same filter
// compiler, the fixture's segment ports) and answers a capture of two
// frames.
func (f *fixture) fakeCapture(w http.ResponseWriter, r *http.Request) {
	req, err := forwarderapi.ParseCaptureRequest(r.URL.Query())
	if err == nil {
		if _, cerr := pcapfilter.Compile(req.Filter); cerr != nil {
			err = &forwarderapi.CaptureError{Kind: forwarderapi.CaptureBadFilter, Message: cerr.Error()}
		} else if !slices.Contains([]string{"LAN1", "LAN2", "LAN3", "LAN4"}, req.Port) {
			err = &forwarderapi.CaptureError{Kind: forwarderapi.CaptureUnknownPort, Message: "port " + req.Port + " is not a segment port"}
		}
	}
	if err != nil {
		ce, _ := forwarderapi.AsCaptureError(err)
		ipc.WriteJSONCode(w, ce.HTTPStatus(), ce)
		return
	}
	f.mu.Lock()
	f.captures = append(f.captures, req)
	f.mu.Unlock()
	w.Header().Set("Content-Type", forwarderapi.CaptureContentType)
	w.Write(fakeCaptureFile(f.t, req.Port))
}

// fakeCaptureFile is the capture the fake forwarderd answers.
func fakeCaptureFile(t *testing.T, port string) []byte {
	var b bytes.Buffer
	pw, err := pcapng.NewWriter(&b, pcapng.SectionOptions{Application: "fake forwarderd"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := pw.AddInterface(pcapng.Interface{Name: port})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, f := range [][]byte{frames.VLAN(frames.UDPFrame(100, 1, 2), 42), frames.ARPRequest()} {
		if err := pw.WritePacket(pcapng.Packet{Interface: id, Time: at.Add(time.Duration(i) * time.Millisecond), Data: f,
			Direction: pcapng.Inbound, Comments: []string{port + " in: forwarded to LAN2"}}); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestCaptureAPI: POST /api/v1/capture takes the password, checks its
// parameters before it asks forwarderd, passes forwarderd's refusals on
// with their status, and streams the capture as a pcapng attachment.
// Another site's page cannot start one with a browser's cached
// credentials: a GET is refused, and so is a cross-site POST.
func TestCaptureAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	get := func(query string, auth bool) *httpResult {
		h := map[string]string{}
		if auth {
			h["Authorization"] = goodAuth
		}
		return f.do(newRequest(http.MethodPost, "/api/v1/capture?"+query, "", h))
	}
	for _, c := range []struct {
		what, method string
		h            map[string]string
		code         int
		says         string
	}{
		{"a GET, as an image or a link on another site's page", http.MethodGet,
			map[string]string{"Authorization": goodAuth, "Sec-Fetch-Site": "cross-site"}, http.StatusMethodNotAllowed, "POST"},
		{"a same-origin GET", http.MethodGet, map[string]string{"Authorization": goodAuth}, http.StatusMethodNotAllowed, "POST"},
		{"a cross-site POST", http.MethodPost,
			map[string]string{"Authorization": goodAuth, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "cross-site"},
		{"a POST from another site's page by its Referer", http.MethodPost,
			map[string]string{"Authorization": goodAuth, "Referer": "http://evil.example/"}, http.StatusForbidden, "cross-site"},
	} {
		res := f.do(newRequest(c.method, "/api/v1/capture?port=LAN1&seconds=3600", "", c.h))
		if res.Code != c.code || !strings.Contains(res.Body, c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.what, res.Code, res.Body, c.code, c.says)
		}
	}
	if len(f.captures) != 0 {
		t.Fatalf("refused requests started captures: %+v", f.captures)
	}
	for _, c := range []struct {
		query string
		auth  bool
		code  int
		says  string
	}{
		{"port=LAN1", false, http.StatusUnauthorized, ""},
		{"", true, http.StatusBadRequest, "port is missing"},
		{"port=LAN1&seconds=0", true, http.StatusBadRequest, "seconds"},
		{"port=LAN1&bogus=1", true, http.StatusBadRequest, `unknown parameter \"bogus\"`},
		{"port=LAN1&filter=vlan+42+and", true, http.StatusBadRequest, "filter"},
		{"port=MGMT", true, http.StatusNotFound, "not a segment port"},
	} {
		res := get(c.query, c.auth)
		if res.Code != c.code || !strings.Contains(res.Body, c.says) {
			t.Errorf("%q: %d %s, want %d saying %q", c.query, res.Code, res.Body, c.code, c.says)
		}
	}
	res := get("port=LAN1&direction=both&filter=vlan+42&seconds=5", true)
	if res.Code != http.StatusOK || res.Header.Get("Content-Type") != forwarderapi.CaptureContentType ||
		!strings.HasPrefix(res.Header.Get("Content-Disposition"), `attachment; filename="ncpos-LAN1-`) {
		t.Fatalf("capture: %d %v", res.Code, res.Header)
	}
	if !bytes.Equal([]byte(res.Body), fakeCaptureFile(t, "LAN1")) {
		t.Errorf("the capture changed on its way through statusd")
	}
	want := forwarderapi.CaptureRequest{Port: "LAN1", Direction: "both", Filter: "vlan 42", Seconds: 5, Snaplen: forwarderapi.CaptureMaxSnaplen}
	if len(f.captures) != 1 || f.captures[0] != want {
		t.Errorf("forwarderd was asked %+v, want %+v", f.captures, want)
	}
	if !hasEvent(f.events.Recent(0), "control", `capture of LAN1 (both, filter "vlan 42", up to 5 s) by ncpos`) {
		t.Errorf("no event for the capture: %+v", f.events.Recent(0))
	}
}

// TestBrowserCapture captures from the dashboard: the page asks with the
// password and what the form says, says why a capture is refused, and
// hands the browser the pcapng file.
func TestBrowserCapture(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	b, _ := loadDashboard(t, ts.URL+"/", 1)
	dir := t.TempDir()
	if err := b.AllowDownloads(dir); err != nil {
		t.Fatal(err)
	}
	const el = `document.getElementById`
	run := func(what, js, ready string) {
		t.Helper()
		if _, err := b.Eval(`(() => { `+js+`; return 1 })()`, 30*time.Second); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := b.Wait(ready, 30*time.Second); err != nil {
			out, _ := b.Eval(el+`('p-status').textContent`, 10*time.Second)
			t.Fatalf("%s: %v; the page says: %s", what, err, out)
		}
	}
	run("a capture without the password", el+`('p-start').click()`,
		el+`('p-status').textContent.startsWith('a capture takes the control password')`)
	run("a filter that does not compile", el+`('c-password').value = '`+fixturePassword+`'; `+el+`('p-filter').value = 'vlan 42 and'; `+el+`('p-start').click()`,
		el+`('p-status').textContent.startsWith('refused (400): filter')`)
	run("a capture", el+`('p-port').value = 'LAN3'; `+el+`('p-direction').value = 'both'; `+el+`('p-filter').value = 'vlan 42'; `+
		el+`('p-seconds').value = '5'; `+el+`('p-start').click()`,
		el+`('p-status').textContent.startsWith('downloaded ncpos-LAN3-')`)
	var got []byte
	for deadline := time.Now().Add(30 * time.Second); got == nil; time.Sleep(100 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(dir, "ncpos-LAN3-*.pcapng"))
		if len(files) == 1 {
			got, _ = os.ReadFile(files[0])
		}
		if time.Now().After(deadline) {
			ls, _ := os.ReadDir(dir)
			t.Fatalf("no capture downloaded into %s: %v", dir, ls)
		}
	}
	if !bytes.Equal(got, fakeCaptureFile(t, "LAN3")) {
		t.Errorf("the downloaded file (%d bytes) is not the capture", len(got))
	}
	want := forwarderapi.CaptureRequest{Port: "LAN3", Direction: "both", Filter: "vlan 42", Seconds: 5, Snaplen: forwarderapi.CaptureMaxSnaplen}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.captures) != 1 || f.captures[0] != want {
		t.Errorf("forwarderd was asked %+v, want %+v", f.captures, want)
	}
}
