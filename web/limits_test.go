package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/events"
)

// from sends r as if from the client at addr.
func from(addr string, r *http.Request) *http.Request {
	r.RemoteAddr = addr
	return r
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// A client that guesses passwords is made to wait, longer after each
// guess, and is logged and counted; the operator logging in from another
// address is not affected, and the guesser's own next good login after
// the wait clears its record.
func TestLoginBackoff(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	const attacker, operator = "198.51.100.7:4000", "192.0.2.20:5000"
	control := func(addr, pw string) *httpResult {
		return f.do(from(addr, newRequest("POST", "/api/v1/control/reboot", `{"reason":"test"}`,
			map[string]string{"Content-Type": "application/json", "Authorization": basic("ncpos", pw)})))
	}
	free := defaultLimits.LoginFreeFailures
	for i := 1; i <= free+1; i++ {
		if r := control(attacker, "guess"+strconv.Itoa(i)); r.Code != 401 {
			t.Fatalf("wrong password %d = %d %s, want 401", i, r.Code, r.Body)
		}
	}
	// The failure after the free ones started a backoff: the next login
	// is not even checked, right password or not.
	for _, pw := range []string{"guess-x", fixturePassword} {
		r := control(attacker, pw)
		if r.Code != 429 || r.Header.Get("Retry-After") != "1" || !strings.Contains(r.Body, "too many failed logins from 198.51.100.7") {
			t.Fatalf("login during the backoff = %d (Retry-After %q) %s, want 429 after 1 s", r.Code, r.Header.Get("Retry-After"), r.Body)
		}
	}
	if r := control(operator, fixturePassword); r.Code != 202 {
		t.Fatalf("operator's login from elsewhere during the attack = %d %s, want 202", r.Code, r.Body)
	}
	// Each further failure doubles the wait.
	f.advance(time.Second)
	if r := control(attacker, "guess-y"); r.Code != 401 {
		t.Fatalf("wrong password after the wait = %d, want 401", r.Code)
	}
	if r := control(attacker, "guess-z"); r.Code != 429 || r.Header.Get("Retry-After") != "2" {
		t.Fatalf("next login = %d (Retry-After %q), want 429 for 2 s", r.Code, r.Header.Get("Retry-After"))
	}
	f.advance(2 * time.Second)
	if r := control(attacker, fixturePassword); r.Code != 202 {
		t.Fatalf("right password after the wait = %d %s, want 202", r.Code, r.Body)
	}
	if r := control(attacker, "guess-after"); r.Code != 401 {
		t.Fatalf("a good login did not clear the failures: %d", r.Code)
	}

	var logged []events.Event
	for _, e := range f.events.Recent(0) {
		if e.Kind == events.KindLogin {
			logged = append(logged, e)
		}
	}
	if want := free + 3; len(logged) != want {
		t.Fatalf("%d login events, want one per checked failure (%d): %+v", len(logged), want, logged)
	}
	if e := logged[len(logged)-1]; e.Fields["client"] != "198.51.100.7" || e.Fields["user"] != "ncpos" || e.Severity != events.Warning {
		t.Errorf("login event = %+v", e)
	}
	fams := scrape(t, f)
	if v, _ := value(fams, "ncpos_status_login_failures_total"); v != float64(free+3) {
		t.Errorf("ncpos_status_login_failures_total = %v, want %d", v, free+3)
	}
	if v, _ := value(fams, "ncpos_status_login_throttled_total"); v != 3 {
		t.Errorf("ncpos_status_login_throttled_total = %v, want 3", v)
	}
}

// The backoff stops doubling at its maximum, and a client's record is
// forgotten once it has been quiet for long.
func TestLoginBackoffBounds(t *testing.T) {
	now := time.Unix(1e9, 0)
	lim := defaultLimits
	lim.MaxClients = 1 // forget on every failure, to test forgetting
	g := newLoginGuard(lim, func() time.Time { return now })
	var waits []time.Duration
	g.onFail = func(_, _ string, _ int, wait time.Duration) { waits = append(waits, wait) }
	for range 40 {
		now = now.Add(g.wait("a"))
		g.fail("a", "ncpos")
	}
	if got := waits[lim.LoginFreeFailures]; got != lim.LoginBackoff {
		t.Errorf("first backoff %v, want %v", got, lim.LoginBackoff)
	}
	if got := waits[len(waits)-1]; got != lim.LoginMaxBackoff {
		t.Errorf("backoff after 40 failures %v, want the maximum %v", got, lim.LoginMaxBackoff)
	}
	now = now.Add(lim.LoginMaxBackoff + lim.LoginForget + time.Second)
	g.fail("b", "ncpos")
	if _, ok := g.clients["a"]; ok {
		t.Error("a quiet client's failures are still kept")
	}
}

// One client cannot take all of statusd's time: past its burst it is
// told to slow down; other clients are served.
func TestRateLimit(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var limited int
	for range defaultLimits.Burst + 20 {
		r := f.do(from("198.51.100.7:4000", newRequest("GET", "/healthz", "", nil)))
		switch r.Code {
		case 200:
		case 429:
			limited++
			if r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "too many requests from 198.51.100.7") {
				t.Fatalf("429 without Retry-After or reason: %v %s", r.Header, r.Body)
			}
		default:
			t.Fatalf("GET /healthz = %d %s", r.Code, r.Body)
		}
	}
	if limited != 20 {
		t.Errorf("%d of %d requests limited, want the 20 past the burst", limited, defaultLimits.Burst+20)
	}
	if r := f.do(from("192.0.2.20:5000", newRequest("GET", "/api/v1/status", "", nil))); r.Code != 200 {
		t.Errorf("another client = %d %s, want 200", r.Code, r.Body)
	}
	f.advance(time.Second)
	if r := f.do(from("198.51.100.7:4000", newRequest("GET", "/healthz", "", nil))); r.Code != 200 {
		t.Errorf("after a second = %d, want 200 again", r.Code)
	}
	if v, _ := value(scrape(t, f), "ncpos_status_refused_total", "reason", "rate"); v != 20 {
		t.Errorf(`ncpos_status_refused_total{reason="rate"} = %v, want 20`, v)
	}
}

// Clients are told apart by address, and an IPv6 host by its /64.
func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:80":               "192.0.2.1",
		"[::ffff:192.0.2.1]:80":      "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:443": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":          "fe80::1",
		"[fe80::abcd:1234]:80":       "fe80::abcd:1234",
		"@":                          "@",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// Clients from many addresses at once fill the table; a newcomer still
// gets in, in the place of the client seen longest ago.
func TestRateLimitTableFull(t *testing.T) {
	now := time.Unix(1e9, 0)
	lim := defaultLimits
	lim.MaxClients = 3
	rl := newRateLimiter(lim, func() time.Time { return now })
	for _, c := range []string{"a", "b", "c"} {
		now = now.Add(time.Millisecond)
		if ok, _ := rl.allow(c); !ok {
			t.Fatalf("client %s refused", c)
		}
	}
	if ok, _ := rl.allow("operator"); !ok {
		t.Fatal("a newcomer was refused with the table full")
	}
	if _, kept := rl.clients["a"]; kept || len(rl.clients) != 3 {
		t.Errorf("table %v: want a, seen longest ago, gone", rl.clients)
	}
}

// Guesses sent all at once are checked one after another, so the backoff
// that the first failures start holds the rest.
func TestLoginBackoffParallel(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	h := f.srv.Handler()
	const n = 16
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := from("198.51.100.7:4000", newRequest("POST", "/api/v1/control/reboot", `{}`,
				map[string]string{"Content-Type": "application/json", "Authorization": basic("ncpos", fmt.Sprint("guess", i))}))
			rec := newRecorder()
			h.ServeHTTP(rec, r)
			codes <- rec.Code
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if want := defaultLimits.LoginFreeFailures + 1; count[401] != want || count[429] != n-want {
		t.Fatalf("%d parallel guesses: %v, want %d checked (401) and the rest refused unchecked (429)", n, count, want)
	}
}
