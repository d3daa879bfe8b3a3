package bypass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/ipc/health"
)

// fakeRelay is a relay with a controller timer, in memory.
type fakeRelay struct {
	clock    *clock
	state    bypassapi.State
	log      []string
	failSet  error
	armed    time.Duration
	deadline time.Time
	expired  bool
	defaults map[bypassapi.Event]bypassapi.State
}

func newFakeRelay(c *clock, st bypassapi.State) *fakeRelay {
	return &fakeRelay{clock: c, state: st, defaults: map[bypassapi.Event]bypassapi.State{}}
}

func (f *fakeRelay) Caps() bypassapi.Caps {
	return bypassapi.Caps{States: bypassapi.States, Events: map[bypassapi.Event][]bypassapi.State{bypassapi.PowerOff: {bypassapi.Bypass}, bypassapi.PowerUp: {bypassapi.Normal, bypassapi.Bypass}, bypassapi.TimerExpiry: {bypassapi.Bypass}},
		Timer: &bypassapi.TimerCaps{Unit: time.Second, Min: time.Second, Max: time.Minute, TimeLeft: true}, ReadBack: true, LinkDownInBypass: true}
}

func (f *fakeRelay) tick() {
	if f.armed > 0 && !f.clock.now().Before(f.deadline) {
		f.state, f.expired, f.armed = bypassapi.Bypass, true, 0
	}
}

func (f *fakeRelay) Set(s bypassapi.State) error {
	f.tick()
	f.log = append(f.log, "set "+string(s))
	if f.failSet != nil {
		return f.failSet
	}
	f.state, f.expired = s, false
	return nil
}

func (f *fakeRelay) Get() (bypassapi.State, error) {
	f.tick()
	f.log = append(f.log, "get")
	return f.state, nil
}

func (f *fakeRelay) SetDefault(e bypassapi.Event, s bypassapi.State) error {
	f.log = append(f.log, "default "+string(e)+" "+string(s))
	f.defaults[e] = s
	return nil
}

func (f *fakeRelay) Default(e bypassapi.Event) (bypassapi.State, error) { return f.defaults[e], nil }

func (f *fakeRelay) Arm(d time.Duration) (time.Duration, error) {
	d = time.Duration(roundUp(d, time.Second)) * time.Second
	f.armed, f.deadline, f.expired = d, f.clock.now().Add(d), false
	f.log = append(f.log, "arm "+d.String())
	return d, nil
}

func (f *fakeRelay) Kick() error {
	f.tick()
	if f.expired {
		return errTimerExpired
	}
	f.deadline = f.clock.now().Add(f.armed)
	f.log = append(f.log, "kick")
	return nil
}

func (f *fakeRelay) Disarm() error { f.armed = 0; return nil }

func (f *fakeRelay) TimeLeft() (time.Duration, error) { return f.deadline.Sub(f.clock.now()), nil }

func (f *fakeRelay) TimerExpired() (bool, error) { return f.expired, nil }

func (f *fakeRelay) Close() error { return nil }

func (f *fakeRelay) take() []string {
	l := f.log
	f.log = nil
	return l
}

// fakeProber answers with whatever verdict the test sets.
type fakeProber struct{ v Verdict }

func (p *fakeProber) Probe(context.Context) Verdict { return p.v }

var (
	fwOK   = Verdict{Report: health.Report{Daemon: "forwarderd", Live: health.Live(time.Now()), Segments: []string{"seg1", "seg2"}}}
	fwDead = Verdict{Err: "forwarderd /health: dial unix: connection refused"}
)

// fwWith is a live forwarder reporting conds.
func fwWith(conds ...health.Condition) Verdict {
	v := fwOK
	v.Report.Conditions = conds
	return v
}

// kinds lists the kinds of a report's conditions for pair.
func kinds(r health.Report, pair string) []health.Kind {
	var out []health.Kind
	for _, c := range r.Conditions {
		if c.Pair == pair {
			out = append(out, c.Kind)
		}
	}
	return out
}

type rig struct {
	c      *clock
	relay  *fakeRelay
	prober *fakeProber
	sup    *Supervisor
	log    *Journal
}

func newRig(t *testing.T, relayState bypassapi.State, v Verdict, timer time.Duration) *rig {
	r := &rig{c: newClock(), prober: &fakeProber{v: v}}
	r.relay = newFakeRelay(r.c, relayState)
	r.log = newJournal("", 0)
	r.log.Logf = t.Logf
	p := &Pair{Name: "pair1", Segment: "seg1", Ports: [2]string{"LAN1", "LAN2"}, Kind: "fake", Backend: r.relay, Timer: timer,
		Defaults: map[bypassapi.Event]bypassapi.State{bypassapi.PowerOff: bypassapi.Bypass, bypassapi.PowerUp: bypassapi.Bypass, bypassapi.TimerExpiry: bypassapi.Bypass}}
	r.sup = newSupervisor([]*Pair{p}, Options{Prober: r.prober, Log: r.log, Now: r.c.now})
	r.sup.Start(context.Background())
	return r
}

// steps runs the supervisor's loop for d on the fake clock.
func (r *rig) steps(d time.Duration) {
	step := r.sup.opts.ProbeInterval()
	for end := r.c.at(d); r.c.now().Before(end); {
		r.c.advance(step)
		r.sup.Step(context.Background())
	}
}

func (r *rig) state() bypassapi.State { return r.sup.pairs[0].applied }

func (r *rig) lastTransition(t *testing.T) bypassapi.Entry {
	t.Helper()
	es := r.log.Entries(0)
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind == "transition" {
			return es[i]
		}
	}
	t.Fatal("no transition logged")
	return bypassapi.Entry{}
}

func TestSupervisorBootFailureRecovery(t *testing.T) {
	r := newRig(t, bypassapi.Bypass, fwDead, 0) // power-up: relay in bypass, forwarder loading
	if got := r.relay.take(); strings.Join(got, ",") != "get,default power_off bypass,default power_up bypass,default timer_expiry bypass" {
		t.Errorf("start: %v", got)
	}
	if o := r.sup.opts; o.ProbeInterval() != 50*time.Millisecond || o.ProbeTimeout() != 100*time.Millisecond {
		t.Errorf("probe every %v with timeout %v, want 50ms and 100ms from the 300ms budget", o.ProbeInterval(), o.ProbeTimeout())
	}
	r.steps(2 * time.Second)
	if r.state() != bypassapi.Bypass || len(r.relay.take()) > 2 {
		t.Fatal("left bypass, or touched the relay, while the forwarder is not up")
	}

	// Healthy: normal after exactly the start hold-down, set then read
	// back.
	r.prober.v = fwOK
	r.steps(time.Second)
	if r.state() != bypassapi.Bypass {
		t.Fatal("normal before the start hold-down")
	}
	r.steps(100 * time.Millisecond)
	if r.state() != bypassapi.Normal {
		t.Fatalf("still %s after the start hold-down", r.state())
	}
	if got := r.relay.take(); len(got) < 2 || got[len(got)-2] != "set normal" || got[len(got)-1] != "get" {
		t.Errorf("normal was not set and read back: %v", got)
	}
	if e := r.lastTransition(t); e.From != bypassapi.Bypass || e.To != bypassapi.Normal || !strings.Contains(e.Cause, "(start hold-down 1s)") {
		t.Errorf("transition %v", e)
	}

	// Failure: bypass in the very next step (within the budget).
	r.prober.v = fwDead
	r.c.advance(50 * time.Millisecond)
	r.sup.Step(context.Background())
	if r.state() != bypassapi.Bypass {
		t.Fatal("not in bypass one probe after the forwarder died")
	}
	if e := r.lastTransition(t); e.To != bypassapi.Bypass || !strings.Contains(e.Cause, "connection refused") {
		t.Errorf("transition %v", e)
	}
	rep := r.sup.Report()
	if !rep.Live.Live || slices.Contains(kinds(rep, "pair1"), health.RelayMismatch) || !slices.Contains(kinds(rep, "pair1"), health.RelayBypass) {
		t.Errorf("bypassd while doing its job: live %v, conditions %v; want live, relay_bypass", rep.Live, kinds(rep, "pair1"))
	}

	// Recovery after a failure: the full hold-down, not the start's.
	r.prober.v = fwOK
	r.steps(4900 * time.Millisecond)
	if r.state() != bypassapi.Bypass {
		t.Fatal("normal again before the hold-down after a failure")
	}
	r.steps(200 * time.Millisecond)
	if e := r.lastTransition(t); r.state() != bypassapi.Normal || !strings.Contains(e.Cause, "(hold-down 5s)") {
		t.Errorf("%s after the hold-down, last transition %v", r.state(), e)
	}
}

// TestSupervisorTestPorts: a pair of self-test ports, in no segment, is
// brought to normal after the hold-down whatever the forwarder says, and
// reports no relay_bypass once there.
func TestSupervisorTestPorts(t *testing.T) {
	c := newClock()
	relay := newFakeRelay(c, bypassapi.Bypass)
	p := &Pair{Name: "pair2", TestPorts: true, Ports: [2]string{"LAN3", "LAN4"}, Kind: "fake", Backend: relay,
		Defaults: map[bypassapi.Event]bypassapi.State{bypassapi.PowerOff: bypassapi.Bypass}}
	log := newJournal("", 0)
	log.Logf = t.Logf
	sup := newSupervisor([]*Pair{p}, Options{Prober: &fakeProber{v: fwDead}, Log: log, Now: c.now})
	sup.Start(context.Background())
	for end := c.at(6 * time.Second); c.now().Before(end); {
		c.advance(sup.opts.ProbeInterval())
		sup.Step(context.Background())
	}
	if st := sup.pairs[0].applied; st != bypassapi.Normal {
		t.Fatalf("test-port pair in %s after the hold-down, want normal", st)
	}
	if k := kinds(sup.Report(), "pair2"); slices.Contains(k, health.RelayBypass) {
		t.Errorf("conditions %v", k)
	}
	// The same pair without test ports stays in bypass: no segment.
	relay = newFakeRelay(c, bypassapi.Bypass)
	p = &Pair{Name: "pair2", Ports: [2]string{"LAN3", "LAN4"}, Kind: "fake", Backend: relay}
	sup = newSupervisor([]*Pair{p}, Options{Prober: &fakeProber{v: fwOK}, Log: log, Now: c.now})
	sup.Start(context.Background())
	for end := c.at(6 * time.Second); c.now().Before(end); {
		c.advance(sup.opts.ProbeInterval())
		sup.Step(context.Background())
	}
	if st := sup.pairs[0].applied; st != bypassapi.Bypass {
		t.Errorf("pair in no segment in %s, want bypass", st)
	}
}

func TestSupervisorAdoptsOnRestart(t *testing.T) {
	r := newRig(t, bypassapi.Normal, fwOK, 0)
	r.steps(time.Second)
	for _, l := range r.relay.take() {
		if strings.HasPrefix(l, "set") {
			t.Fatalf("restarted bypassd touched a working relay: %s", l)
		}
	}
	if r.state() != bypassapi.Normal {
		t.Fatalf("state %s", r.state())
	}
}

func TestSupervisorControllerTimer(t *testing.T) {
	r := newRig(t, bypassapi.Normal, fwOK, 3*time.Second)
	r.steps(10 * time.Second)
	kicks := 0
	for _, l := range r.relay.take() {
		if l == "kick" {
			kicks++
		}
	}
	// 3s timeout, kicked every second.
	if kicks < 9 || kicks > 11 || r.state() != bypassapi.Normal {
		t.Fatalf("%d kicks in 10s, state %s", kicks, r.state())
	}
	// bypassd hangs (no steps): the controller falls to bypass by itself.
	r.c.advance(4 * time.Second)
	if st, _ := r.relay.Get(); st != bypassapi.Bypass {
		t.Fatalf("relay %s after bypassd stopped kicking", st)
	}
	// bypassd comes back: it notices, logs the expiry and sets normal again.
	r.steps(2 * time.Second)
	var sawExpiry bool
	for _, e := range r.log.Entries(0) {
		if strings.Contains(e.Cause, "timer expired") || strings.Contains(e.Cause, "timer had expired") {
			sawExpiry = true
		}
	}
	if !sawExpiry || r.state() != bypassapi.Normal || r.relay.armed == 0 {
		t.Errorf("after the expiry: logged %v, state %s, armed %v", sawExpiry, r.state(), r.relay.armed)
	}
}

func TestSupervisorSetFailure(t *testing.T) {
	r := newRig(t, bypassapi.Bypass, fwOK, 0)
	r.relay.failSet = errors.New("i2c: no acknowledge")
	r.steps(6 * time.Second)
	if r.state() != bypassapi.Bypass {
		t.Fatalf("state %s", r.state())
	}
	rep := r.sup.Report()
	if !rep.Live.Live || !slices.Contains(kinds(rep, "pair1"), health.RelayMismatch) {
		t.Errorf("report %+v, want live with relay_mismatch", rep)
	}
	errs := 0
	for _, e := range r.log.Entries(0) {
		if e.Kind == "error" {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("%d error entries for one repeating error, want 1", errs)
	}
	r.relay.failSet = nil
	r.steps(100 * time.Millisecond)
	if r.state() != bypassapi.Normal || len(kinds(r.sup.Report(), "pair1")) != 0 {
		t.Errorf("no recovery after the relay works again: %s %v", r.state(), kinds(r.sup.Report(), "pair1"))
	}
}

func TestSupervisorLinksDownInBypass(t *testing.T) {
	// forwarderd live but the segment's links are down because the
	// hardware relay cut the NIC ports off: that must not keep the pair in
	// bypass for ever.
	linksDown := fwWith(
		health.Condition{Kind: health.LinkDown, Segment: "seg1", Port: "LAN1", Detail: "port LAN1 (eth1) link down"},
		health.Condition{Kind: health.LinkDown, Segment: "seg1", Port: "LAN2", Detail: "port LAN2 (eth2) link down"})
	r := newRig(t, bypassapi.Bypass, linksDown, 0)
	r.steps(9 * time.Second)
	var got []string
	for _, e := range r.log.Entries(0) {
		if e.Kind == "transition" {
			got = append(got, string(e.To)+": "+e.Cause)
		}
	}
	// Normal after the start hold-down; there the links being down is a
	// real fault once the ports have had LinkSettle to find their cables,
	// so back to bypass.
	if len(got) != 2 || !strings.HasPrefix(got[0], "normal: forwarder healthy for 1s (start hold-down 1s)") || !strings.HasPrefix(got[1], "bypass: forwarder unhealthy: link_down") {
		t.Fatalf("transitions %q: links down behind a bypassed relay must not count as a fault", got)
	}
	// A condition of another segment does not move this pair.
	other := fwWith(health.Condition{Kind: health.TxStalled, Segment: "seg2", Port: "LAN4"})
	if h := other.For("seg1", false); !h.OK {
		t.Errorf("seg1 unhealthy for seg2's condition: %v", h)
	}
	if h := other.For("seg2", false); h.OK || !slices.Equal(h.Kinds, []health.Kind{health.TxStalled}) {
		t.Errorf("seg2 with a stalled port: %+v", h)
	}
	notLive := fwOK
	notLive.Report.Live = health.Live(time.Now(), health.Problem{Kind: health.HeartbeatStale})
	if h := notLive.For("seg1", false); h.OK {
		t.Error("a forwarder that is not live counted as serving seg1")
	}
	if h := fwOK.For("", false); h.OK {
		t.Error("a pair without a segment counted as served")
	}
	if h := fwOK.For("seg9", false); h.OK || !slices.Equal(h.Kinds, []health.Kind{health.NotForwarded}) {
		t.Errorf("a segment forwarderd does not know: %+v", h)
	}
	// A cut-off relay excuses links down, nothing else.
	stalled := fwWith(health.Condition{Kind: health.LinkDown, Segment: "seg1", Port: "LAN1"}, health.Condition{Kind: health.TxStalled, Segment: "seg1", Port: "LAN2"})
	if h := stalled.For("seg1", true); h.OK {
		t.Error("a stalled port excused by a cut-off relay")
	}
}

// TestDecisionsIgnoreWording rewrites every human text the forwarder
// sends (liveness problems, condition details) and wants the very same
// decisions: only kinds decide.
func TestDecisionsIgnoreWording(t *testing.T) {
	verdicts := []Verdict{
		fwOK,
		fwWith(health.Condition{Kind: health.LinkDown, Segment: "seg1", Port: "LAN1", Detail: "port LAN1 (eth1) link down"}),
		fwWith(health.Condition{Kind: health.TxStalled, Segment: "seg1", Port: "LAN2", Detail: "5 frames entered LAN1 in the last 3s, none left LAN2"}),
		fwWith(health.Condition{Kind: health.PortAbsent, Segment: "seg2", Port: "LAN4", Detail: "port LAN4 of segment seg2 is not on this box"}),
		fwWith(health.Condition{Kind: health.LinkDown, Segment: "seg1", Port: "LAN1", Detail: "segment seg1: frames entered, none left"}),
	}
	nl := fwOK
	nl.Report.Live = health.Live(time.Now(), health.Problem{Kind: health.EngineFailed, Detail: "port LAN1 link down"})
	verdicts = append(verdicts, nl)
	reword := func(v Verdict) Verdict {
		w := v
		w.Report.Conditions = nil
		for _, c := range v.Report.Conditions {
			c.Detail = "port " + c.Port + " link down; none left; heartbeat stale"
			w.Report.Conditions = append(w.Report.Conditions, c)
		}
		w.Report.Live.Problems = nil
		for _, p := range v.Report.Live.Problems {
			p.Detail = "everything is fine"
			w.Report.Live.Problems = append(w.Report.Live.Problems, p)
		}
		return w
	}
	for i, v := range verdicts {
		for _, seg := range []string{"seg1", "seg2", ""} {
			for _, cut := range []bool{false, true} {
				a, b := v.For(seg, cut), reword(v).For(seg, cut)
				if a.OK != b.OK || !slices.Equal(a.Kinds, b.Kinds) {
					t.Errorf("verdict %d, %q, cut %v: %v/%v before rewording, %v/%v after", i, seg, cut, a.OK, a.Kinds, b.OK, b.Kinds)
				}
			}
		}
		// And through the whole policy, on a fake clock.
		runs := [2][]string{}
		for k, vv := range []Verdict{v, reword(v)} {
			r := newRig(t, bypassapi.Bypass, vv, 0)
			r.steps(12 * time.Second)
			for _, e := range r.log.Entries(0) {
				if e.Kind == "transition" {
					runs[k] = append(runs[k], fmt.Sprintf("%s->%s@%d", e.From, e.To, e.Time.UnixMilli()))
				}
			}
		}
		if !slices.Equal(runs[0], runs[1]) {
			t.Errorf("verdict %d: transitions %v before rewording, %v after", i, runs[0], runs[1])
		}
	}
}

func TestSupervisorAPI(t *testing.T) {
	r := newRig(t, bypassapi.Normal, fwOK, 0)
	srv := httptest.NewServer(r.sup.Handler())
	defer srv.Close()
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	del := func(path string) int {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if code, body := post("/override", `{"pair":"pair1","state":"bypass"}`); code != 400 || !strings.Contains(body, "needs a reason") {
		t.Errorf("override without reason: %d %s", code, body)
	}
	if code, body := post("/override", `{"pair":"pair9","state":"bypass","reason":"x"}`); code != 400 || !strings.Contains(body, `unknown pair "pair9"`) {
		t.Errorf("override of an unknown pair: %d %s", code, body)
	}
	code, body := post("/override", `{"pair":"pair1","state":"bypass","reason":"replacing the switch","for":"10m","by":"admin","update":true}`)
	if code != 200 || r.state() != bypassapi.Bypass {
		t.Fatalf("override: %d %s, state %s", code, body, r.state())
	}
	var st bypassapi.Status
	json.Unmarshal([]byte(body), &st)
	if o := st.Pairs[0].Override; o == nil || o.Reason != "replacing the switch" || o.By != "admin" || !o.Update || !o.Expires.Equal(r.c.at(10*time.Minute)) {
		t.Errorf("status override %+v", st.Pairs[0].Override)
	}
	if e := r.lastTransition(t); !strings.Contains(e.Cause, "manual override: replacing the switch") {
		t.Errorf("transition cause %q", e.Cause)
	}
	// Expiry: back to normal (the forwarder has been healthy all along).
	r.steps(10*time.Minute + 100*time.Millisecond)
	if r.state() != bypassapi.Normal {
		t.Errorf("after the override expired: %s", r.state())
	}
	if e := r.lastTransition(t); !strings.Contains(e.Cause, `override "replacing the switch" expired`) {
		t.Errorf("transition cause %q", e.Cause)
	}

	// Cleared by hand.
	post("/override", `{"state":"bypass","reason":"maintenance"}`)
	if r.state() != bypassapi.Bypass {
		t.Fatal("override of all pairs not applied")
	}
	if code := del("/override?by=admin"); code != 200 || r.state() != bypassapi.Normal {
		t.Errorf("clear: %d, state %s", code, r.state())
	}

	// Planned update: bypass before answering; called off: normal again.
	if code, body := post("/planned", `{"kind":"update","reason":"ota v2"}`); code != 200 || r.state() != bypassapi.Bypass {
		t.Fatalf("planned: %d %s, state %s", code, body, r.state())
	}
	r.steps(time.Second)
	if r.state() != bypassapi.Bypass {
		t.Fatal("planned bypass not held")
	}
	if code, _ := post("/planned", `{"kind":"nap","reason":"x"}`); code != 400 {
		t.Errorf("planned nap accepted: %d", code)
	}
	del("/planned?by=updater")
	if r.state() != bypassapi.Normal {
		t.Errorf("after the update was called off: %s", r.state())
	}

	// Metrics.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`ncpos_bypass_state{pair="pair1",state="normal"} 1`, `ncpos_bypass_state{pair="pair1",state="bypass"} 0`,
		`ncpos_bypass_transitions_total{pair="pair1",state="bypass"} 3`, `ncpos_bypass_forwarder_healthy{pair="pair1"} 1`, `ncpos_bypass_failsafe 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestJournalCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ncpos", "bypass.log")
	j := newJournal(path, 1000)
	j.Logf = func(string, ...any) {}
	for i := 0; i < 50; i++ {
		j.Add(bypassapi.Entry{Time: time.Unix(int64(i), 0), Pair: "pair1", Kind: "transition", From: bypassapi.Normal, To: bypassapi.Bypass, Cause: "forwarder unhealthy: heartbeat stale"})
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() > 1000 {
		t.Fatalf("log %v, %v", st, err)
	}
	old, err := os.Stat(path + ".1")
	if err != nil || old.Size() > 1000 {
		t.Fatalf("rotated log %v, %v", old, err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last bypassapi.Entry
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Time.Unix() != 49 {
		t.Errorf("last line %q: %v", lines[len(lines)-1], err)
	}
	if n := len(j.Entries(0)); n != 50 {
		t.Errorf("%d entries in memory", n)
	}
}

// TestFailsafe: an operator's profile with an invalid pair is refused with
// the field named; the valid pair is held in bypass (never normal, however
// healthy the forwarder), the invalid one is not touched at all.
func TestFailsafe(t *testing.T) {
	cfg, err := config.Parse("ncpos.toml", []byte("platform = \"iec-516p\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\nbypass = \"pair1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The operator's copy: pair1 filled in correctly, pair9 with a
	// register out of range.
	text := `name = "iec-516p"
description = "operator copy"
[[port]]
name = "LAN1"
pci = "0000:01:00.0"
[[port]]
name = "LAN2"
pci = "0000:02:00.0"
[[port]]
name = "LAN3"
pci = "0000:03:00.0"
[[port]]
name = "LAN5"
pci = "0000:05:00.0"
[[port]]
name = "MGMT"
pci = "0000:06:00.0"
management = true

[[bypass_pair]]
name = "pair1"
ports = ["LAN1", "LAN2"]
backend = "superio"
register_map = "operator"
[bypass_pair.superio]
logical_device = 8
[bypass_pair.registers]
state.normal = [{reg = 0xf1, mask = 0x10, value = 0x10}]
state.bypass = [{reg = 0xf1, mask = 0x10, value = 0x00}]

[[bypass_pair]]
name = "pair9"
ports = ["LAN5", "LAN3"]
backend = "superio"
register_map = "operator"
[bypass_pair.superio]
logical_device = 8
[bypass_pair.registers]
state.normal = [{reg = 0x1f1, mask = 0x20, value = 0x20}]
state.bypass = [{reg = 0xf1, mask = 0x20, value = 0x00}]
`
	if err := os.WriteFile(filepath.Join(dir, "iec-516p.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newW83627()
	*w.reg(8, 0xf1) = 0x30 // both relays normal
	opened := map[string]bool{}
	open := func(bp config.BypassPair, _ [2]string) (Backend, error) {
		opened[bp.Name] = true
		return newSuperIO(w, bp.SuperIO, bp.Registers)
	}
	set := Build(cfg, dir, t.TempDir(), open)
	if !strings.Contains(set.Failsafe, "bypass_pair[1].registers.state.normal[0].reg: 0x1f1 is out of range") {
		t.Fatalf("failsafe %q does not name the field", set.Failsafe)
	}
	if !opened["pair1"] || opened["pair9"] || len(set.Pairs) != 2 || set.Pairs[1].Backend != nil {
		t.Fatalf("opened %v, pairs %+v", opened, set.Pairs)
	}
	c := newClock()
	sup := newSupervisor(set.Pairs, Options{Prober: &fakeProber{fwOK}, Failsafe: set.Failsafe, Now: c.now, Log: &Journal{Logf: t.Logf}})
	sup.Start(context.Background())
	for i := 0; i < 200; i++ {
		c.advance(50 * time.Millisecond)
		sup.Step(context.Background())
	}
	if got := *w.reg(8, 0xf1); got != 0x20 {
		t.Errorf("CRF1 = %#02x, want 0x20: pair1 (bit 4) in bypass, pair9's bit 5 untouched", got)
	}
	if err := sup.SetOverride("pair1", bypassapi.Override{State: bypassapi.Normal, Reason: "please"}); err != nil {
		t.Fatal(err)
	}
	if st := sup.Status(); st.Pairs[0].State != bypassapi.Bypass || st.Failsafe == "" || !strings.Contains(st.Pairs[1].Problem, "invalid") {
		t.Errorf("status %+v", st)
	}
	rep := sup.Report()
	if !rep.Live.Live || !health.Has(rep.Conditions, health.ProfileRefused) || !slices.Contains(kinds(rep, "pair9"), health.RelayNotDrivable) {
		t.Errorf("report %+v, want live with profile_refused and pair9 not drivable", rep)
	}
}

// TestOverridesPersist sets a maintenance override, restarts bypassd (a new
// supervisor on the same file, as after a reboot) and wants the override
// still in force, the relay kept where it says, until it expires.
func TestOverridesPersist(t *testing.T) {
	file := filepath.Join(t.TempDir(), "perm/ncpos/bypass-overrides.json")
	c := newClock()
	relay := newFakeRelay(c, bypassapi.Normal)
	start := func() *Supervisor {
		p := &Pair{Name: "pair1", Segment: "seg1", Ports: [2]string{"LAN1", "LAN2"}, Kind: "fake", Backend: relay}
		sup := newSupervisor([]*Pair{p}, Options{Prober: &fakeProber{fwOK}, Log: &Journal{Logf: t.Logf}, Now: c.now, Overrides: file})
		sup.Start(context.Background())
		return sup
	}
	steps := func(sup *Supervisor, d time.Duration) {
		for end := c.at(d); c.now().Before(end); {
			c.advance(50 * time.Millisecond)
			sup.Step(context.Background())
		}
	}
	sup := start()
	steps(sup, time.Second)
	if err := sup.SetOverride("pair1", bypassapi.Override{State: bypassapi.Bypass, Reason: "maintenance window", By: "ncpos", Expires: c.at(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if relay.state != bypassapi.Bypass {
		t.Fatalf("relay %s after the override", relay.state)
	}
	// bypassd restarts (or the box reboots): the relay reads bypass, the
	// forwarder is healthy, and still the override holds.
	steps(sup, 2*time.Minute)
	sup = start()
	steps(sup, time.Minute)
	st := sup.Status()
	if o := st.Pairs[0].Override; o == nil || o.Reason != "maintenance window" || relay.state != bypassapi.Bypass {
		t.Fatalf("after a restart: override %+v, relay %s; want the override kept and the relay in bypass", o, relay.state)
	}
	if !slices.Contains(kinds(sup.Report(), "pair1"), health.RelayBypass) {
		t.Errorf("conditions %v, want relay_bypass", kinds(sup.Report(), "pair1"))
	}
	// It expires on time, is forgotten on the file, and the pair goes back
	// to normal after the hold-down.
	steps(sup, 7*time.Minute+6*time.Second)
	if relay.state != bypassapi.Normal || sup.Status().Pairs[0].Override != nil {
		t.Fatalf("after the expiry: relay %s, override %+v", relay.state, sup.Status().Pairs[0].Override)
	}
	saved, err := readOverrides(file)
	if err != nil || len(saved) != 0 {
		t.Errorf("file after the expiry: %v, %v", saved, err)
	}
	// A restart now keeps normal.
	sup = start()
	steps(sup, time.Second)
	if relay.state != bypassapi.Normal {
		t.Errorf("restart after the expiry: relay %s", relay.state)
	}
	// A damaged file is reported and ignored, never fatal.
	os.WriteFile(file, []byte("{not json"), 0o644)
	sup = start()
	var logged bool
	for _, e := range sup.opts.Log.Entries(0) {
		logged = logged || (e.Kind == "error" && strings.Contains(e.Cause, file))
	}
	if !logged {
		t.Error("a damaged overrides file was not reported")
	}
}

// TestReportLiveness: bypassd is live while its loop looks at the
// forwarder, whatever the relays do, and not once the loop stops.
func TestReportLiveness(t *testing.T) {
	r := newRig(t, bypassapi.Bypass, fwDead, 0)
	r.steps(time.Second)
	if rep := r.sup.Report(); !rep.Live.Live {
		t.Fatalf("not live while stepping: %s", rep.Live)
	}
	r.c.advance(3 * time.Second) // no steps: the loop hangs
	rep := r.sup.Report()
	if rep.Live.Live || rep.Live.Problems[0].Kind != health.HeartbeatStale {
		t.Fatalf("live with a stopped loop: %+v", rep.Live)
	}
}

// TestPolicyOnEveryKind runs the whole supervisor on a fake clock against
// a forwarder that reports each known kind in turn: a liveness problem or
// a condition of seg1 puts pair1 in bypass within one probe, a box
// condition or another segment's leaves it forwarding, and once the
// condition ends the pair is back in normal after the hold-down.
func TestPolicyOnEveryKind(t *testing.T) {
	for _, k := range health.Kinds() {
		class, _ := k.Class()
		for _, where := range []string{"seg1", "seg2", ""} {
			v := fwOK
			switch {
			case class == health.ClassLiveness:
				if where != "" {
					continue
				}
				v.Report.Live = health.Live(time.Now(), health.Problem{Kind: k})
			default:
				v = fwWith(health.Condition{Kind: k, Segment: where, Port: "LAN2"})
			}
			want := bypassapi.Normal
			if class == health.ClassLiveness || where == "seg1" {
				want = bypassapi.Bypass
			}
			r := newRig(t, bypassapi.Normal, fwOK, 0)
			r.steps(time.Second)
			r.prober.v = v
			r.steps(r.sup.opts.ProbeInterval())
			if r.state() != want {
				t.Errorf("%s on %q: relay %s, want %s", k, where, r.state(), want)
			}
			r.prober.v = fwOK
			r.steps(5*time.Second + r.sup.opts.ProbeInterval())
			if r.state() != bypassapi.Normal {
				t.Errorf("%s on %q: relay %s after the hold-down, want normal", k, where, r.state())
			}
		}
	}
}
