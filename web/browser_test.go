package web

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/ncpos/ncpos/internal/browsertest"
	"github.com/ncpos/ncpos/web/api"
)

// loadDashboard opens the dashboard at url in a browser of its own and
// returns its DOM once the page has shown polls answers of /api/v1/status.
func loadDashboard(t *testing.T, url string, polls int) (*browsertest.Browser, *html.Node) {
	t.Helper()
	b := browsertest.Start(t, browsertest.Options{})
	dom, err := b.Load(url, fmt.Sprintf("polled >= %d", polls), 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	return b, doc
}

// artifactDir is $NCPOS_ARTIFACTS, or test-artifacts/ at the module root
// (git-ignored).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NCPOS_ARTIFACTS")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "test-artifacts")
				break
			}
			if filepath.Dir(d) == d {
				dir = filepath.Join(wd, "test-artifacts")
				break
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// liveFixture is a fake appliance with two minutes of varying traffic,
// a link flap, a bypass and a self-test, so that every part of the
// dashboard has something to show.
func liveFixture(t *testing.T) *fixture {
	f := newFixture(t, fixtureOpts{})
	synced := time.Date(2026, 11, 30, 11, 59, 30, 0, time.UTC)
	f.mon.Collector.Time = func() api.TimeSync {
		return api.TimeSync{Servers: []string{"192.0.2.1"}, Synced: true, Server: "192.0.2.1", Stratum: 2, OffsetSeconds: 0.0021,
			LastSync: synced, FirstSync: synced.Add(-time.Hour), StepSeconds: 631152000}
	}
	f.write("perm/selftest.json", `{"started":"2026-11-30T11:40:00Z","finished":"2026-11-30T11:52:00Z","passed":false,
"summary":"RFC 2544 throughput on seg1 (LAN1 → LAN2), seg2 (LAN3 → LAN4); not reached: seg2 64 B FAILED",
"results":[{"segment":"seg1","direction":"LAN1 → LAN2","frame_size":64,"throughput_pps":1488095,"throughput_mbps":761.9,"loss_percent":0,"latency_us":9.8,"expected_pps":1413690,"expected":"95% of line rate","verdict":"PASSED"},
{"segment":"seg1","direction":"LAN1 → LAN2","frame_size":512,"throughput_pps":234962,"throughput_mbps":962.4,"loss_percent":0,"latency_us":14.1,"expected_pps":223214,"expected":"95% of line rate","verdict":"PASSED"},
{"segment":"seg1","direction":"LAN1 → LAN2","frame_size":1518,"throughput_pps":81274,"throughput_mbps":986.9,"loss_percent":0,"latency_us":22.5,"expected_pps":77211,"expected":"95% of line rate","verdict":"PASSED"},
{"segment":"seg2","direction":"LAN3 → LAN4","frame_size":64,"throughput_pps":902000,"throughput_mbps":461.8,"loss_percent":0,"latency_us":11.2,"expected_pps":1413690,"expected":"95% of line rate","verdict":"FAILED"},
{"segment":"seg2","direction":"LAN3 → LAN4","frame_size":512,"throughput_pps":234962,"throughput_mbps":962.4,"loss_percent":0,"latency_us":15.0,"expected_pps":223214,"expected":"95% of line rate","verdict":"PASSED"},
{"segment":"seg2","direction":"LAN3 → LAN4","frame_size":1518,"throughput_pps":81274,"throughput_mbps":986.9,"loss_percent":0,"latency_us":23.9,"expected_pps":77211,"expected":"95% of line rate","verdict":"PASSED"}]}`)
	for i := 0; i < 120; i++ {
		w := 1 + math.Sin(float64(i)/12)
		f.traffic(1, time.Second, map[string]uint64{
			"MGMT": 12,
			"LAN1": uint64(40000 + 30000*w), "LAN2": uint64(38000 + 25000*w),
			"LAN3": uint64(2000 + 1500*w),
		}, 700)
		switch i {
		case 60:
			f.setLink("eth3", "down")
		case 64:
			f.setLink("eth3", "up")
		case 100:
			f.bypassd.set("seg1", "bypass", "forwarder unhealthy: heartbeat stale for 3s", f.clock())
		}
	}
	return f
}

// TestBrowserDashboard loads the dashboard in headless Chromium from a
// statusd served on 127.0.0.1 by the test, checks that what the page shows
// is what /api/v1/status says, and saves a screenshot.
func TestBrowserDashboard(t *testing.T) {
	f := liveFixture(t)
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()

	var status api.Snapshot
	f.getJSON("/api/v1/status", &status)
	b, doc := loadDashboard(t, ts.URL+"/", 1)
	checkDashboard(t, doc, &status)

	shot := filepath.Join(artifactDir(t), "dashboard.png")
	os.Remove(shot)
	n, err := b.Screenshot(shot, time.Minute)
	if err != nil || n < 20000 {
		t.Fatalf("screenshot %s: %v (size %d)", shot, err, n)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, n)
}

// checkDashboard compares the rendered page with the API's numbers.
func checkDashboard(t *testing.T, doc *html.Node, s *api.Snapshot) {
	t.Helper()
	text := func(n *html.Node) string {
		var b strings.Builder
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.TextNode {
				b.WriteString(n.Data)
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(n)
		return strings.TrimSpace(b.String())
	}
	byID := func(id string) *html.Node {
		return find(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	}
	field := func(scope *html.Node, name string) *html.Node {
		if scope == nil {
			return nil
		}
		return find(scope, func(n *html.Node) bool { return attr(n, "data-field") == name })
	}
	expect := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s shows %q, API says %q", what, got, want)
		}
	}

	expect("build", text(byID("build")), s.System.BuildID)
	expect("state", attr(byID("state"), "data-state"), s.Summary.State)
	expect("state badge", text(byID("state")), strings.ToUpper(s.Summary.State))
	expect("last reset", text(byID("last-reset")), s.System.Watchdog.Petter.LastReset.Text)
	expect("data time", attr(byID("live"), "data-time"), s.Time.Format(time.RFC3339Nano))
	if problems := text(byID("problems")); !strings.Contains(problems, "segment seg1 in bypass: forwarder unhealthy: heartbeat stale for 3s") {
		t.Errorf("problems banner %q", problems)
	}

	for _, p := range s.Ports {
		row := find(doc, func(n *html.Node) bool { return attr(n, "data-port") == p.Name })
		if row == nil {
			t.Errorf("port %s not shown", p.Name)
			continue
		}
		expect(p.Name+" name", text(field(row, "name")), p.Name)
		expect(p.Name+" link", attr(field(row, "link"), "data-value"), p.Link)
		for _, c := range []struct {
			name string
			v    float64
		}{{"rx_pps", p.Rates.RxPPS}, {"tx_pps", p.Rates.TxPPS}, {"rx_bps", p.Rates.RxBPS}, {"tx_bps", p.Rates.TxBPS}, {"drops_ps", p.Rates.DropsPS}} {
			if got, err := strconv.ParseFloat(attr(field(row, c.name), "data-value"), 64); err != nil || got != c.v {
				t.Errorf("%s %s shows %v (%v), API says %v", p.Name, c.name, got, err, c.v)
			}
		}
		expect(p.Name+" drops total", attr(field(row, "drops_total"), "data-value"), fmt.Sprint(p.Counters.RxDropped+p.Counters.TxDropped))
		if p.LLDP != nil {
			want := ""
			for _, n := range p.LLDP.Neighbors {
				want += n.SystemName + " port " + n.PortID
			}
			if p.LLDP.Rejected > 0 {
				want += fmt.Sprintf("%d unreadable", p.LLDP.Rejected)
			}
			if p.LLDP.Dropped > 0 {
				want += fmt.Sprintf("%d dropped", p.LLDP.Dropped)
			}
			expect(p.Name+" LLDP neighbour", text(field(row, "lldp")), want)
		}
		if n := count(row, func(n *html.Node) bool { return n.Data == "polyline" }); n != 2 {
			t.Errorf("port %s chart has %d lines, want receive and transmit", p.Name, n)
		}
	}
	// The formatting people read, for one port whose rates the fixture fixes.
	mgmt := find(doc, func(n *html.Node) bool { return attr(n, "data-port") == "MGMT" })
	expect("MGMT rx pps text", text(field(mgmt, "rx_pps")), "12 pps")
	expect("MGMT rx bit/s text", text(field(mgmt, "rx_bps")), "67.2 kbit/s")

	for _, seg := range s.Segments {
		card := find(doc, func(n *html.Node) bool { return attr(n, "data-segment") == seg.Name })
		if card == nil {
			t.Errorf("segment %s not shown", seg.Name)
			continue
		}
		expect(seg.Name+" bypass state", attr(field(card, "bypass-state"), "data-value"), seg.Bypass.State)
		expect(seg.Name+" bypass reason", text(field(card, "bypass-reason")), seg.Bypass.Reason)
		expect(seg.Name+" ports", text(field(card, "ports")), strings.Join(seg.Ports, " ⇄ "))
	}
	wd := s.System.Watchdog.Petter
	expect("clock", text(field(byID("system"), "clock")),
		"synced with 192.0.2.1 (stratum 2), offset 2.1 ms at 2026-11-30 11:59:30 UTC; stepped by 7305d 0h 0m at 2026-11-30 10:59:30 UTC")
	expect("watchdog device", text(field(byID("watchdog"), "wd-identity")), wd.Identity+" ("+wd.Device+")")
	expect("watchdog time left", text(field(byID("watchdog"), "wd-timeleft")), fmt.Sprintf("%d s", wd.TimeLeftSec))
	for _, d := range s.System.Daemons {
		row := find(doc, func(n *html.Node) bool { return attr(n, "data-daemon") == d.Name })
		expect(d.Name+" state", text(field(row, "state")), d.State)
	}
	for _, c := range s.Host.CPUs {
		bar := find(doc, func(n *html.Node) bool { return attr(n, "data-cpu") == fmt.Sprint(c.CPU) })
		expect(fmt.Sprintf("cpu%d", c.CPU), attr(bar, "data-value"), fmt.Sprint(c.BusyPercent))
	}
	rows := findAll(byID("events"), func(n *html.Node) bool { return attr(n, "data-seq") != "" })
	if len(rows) != len(s.Events) || len(rows) == 0 {
		t.Errorf("%d events shown, API has %d", len(rows), len(s.Events))
	}
	for i := 0; i < min(len(rows), len(s.Events)); i++ {
		expect(fmt.Sprintf("event %d", i), text(field(rows[i], "message")), s.Events[i].Message)
	}
	expect("self-test", text(field(byID("selftest"), "selftest")), "FAILED")
	// One row per segment and size, each with its own verdict, and one
	// chart line per segment.
	for _, r := range s.SelfTest.Results {
		row := find(byID("selftest"), func(n *html.Node) bool {
			return attr(n, "data-segment") == r.Segment && attr(n, "data-size") == strconv.Itoa(r.FrameSize)
		})
		expect(fmt.Sprintf("self-test %s %d B", r.Segment, r.FrameSize), text(field(row, "verdict")), r.Verdict)
	}
	if n := count(byID("selftest"), func(n *html.Node) bool { return n.Data == "polyline" }); n != 2 {
		t.Errorf("self-test chart has %d lines, want one per segment (2)", n)
	}
	expect("bypass NICs", text(field(byID("hardware"), "hw-nics")), "0000:05:00.0 8086:10d3: Silicom NIC (not supported)")
	expect("SMBus", text(field(byID("hardware"), "hw-smbus")), "i2c-0 SMBus I801 adapter at f000: 0x73")
	expect("fits", text(field(byID("hardware"), "hw-fits")), "fw-8865 pair1 (lanner, drivable): i2c-0 answers at 0x73")
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if all := findAll(n, match); len(all) > 0 {
		return all[0]
	}
	return nil
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	if n != nil {
		walk(n)
	}
	return out
}

func count(n *html.Node, match func(*html.Node) bool) int { return len(findAll(n, match)) }

// TestBrowserLiveUpdate: the page keeps polling /api/v1/status and shows
// newer samples than the one embedded in it.
func TestBrowserLiveUpdate(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.traffic(2, time.Second, map[string]uint64{"LAN1": 1000}, 100)
	h := f.srv.Handler()
	polls := 0
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/status" {
			mu.Lock()
			polls++
			f.traffic(1, time.Second, map[string]uint64{"LAN1": uint64(1000 * (polls + 1))}, 100)
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	first := f.mon.LastStep()
	_, doc := loadDashboard(t, ts.URL+"/", 2)
	live := find(doc, func(n *html.Node) bool { return attr(n, "id") == "live" })
	shown, err := time.Parse(time.RFC3339Nano, attr(live, "data-time"))
	mu.Lock()
	defer mu.Unlock()
	if err != nil || !shown.After(first) || polls < 2 {
		t.Fatalf("after %d polls the page shows data of %v (%v); the embedded sample was of %v", polls, shown, err, first)
	}
	row := find(doc, func(n *html.Node) bool { return attr(n, "data-port") == "LAN1" })
	rx := find(row, func(n *html.Node) bool { return attr(n, "data-field") == "rx_pps" })
	if v, _ := strconv.ParseFloat(attr(rx, "data-value"), 64); v <= 1000 {
		t.Fatalf("LAN1 rx_pps shown %v, want the rate of a later poll (> 1000)", v)
	}
	t.Logf("%d polls; page shows the sample of %v (embedded: %v)", polls, shown.Format(time.TimeOnly), first.Format(time.TimeOnly))
}
