package timesync

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/ntp"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc/health"
)

// ntpServer answers NTP client requests on loopback with its own time:
// the host's shifted by skew. Quiet stops its answers.
type ntpServer struct {
	conn    *net.UDPConn
	skew    atomic.Int64 // nanoseconds
	stratum atomic.Int32
	quiet   atomic.Bool
}

func startNTPServer(t *testing.T, skew time.Duration) *ntpServer {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &ntpServer{conn: c}
	s.skew.Store(int64(skew))
	s.stratum.Store(2)
	t.Cleanup(func() { c.Close() })
	go s.serve()
	return s
}

func (s *ntpServer) addr() string { return s.conn.LocalAddr().String() }

// ntpTime is t as an NTP timestamp (seconds since 1900, 32.32 fixed).
func ntpTime(t time.Time) uint64 {
	d := t.Sub(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC))
	sec := uint64(d / time.Second)
	frac := uint64(d%time.Second) << 32 / uint64(time.Second)
	return sec<<32 | frac
}

func (s *ntpServer) serve() {
	buf := make([]byte, 512)
	for {
		n, from, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if n < 48 || s.quiet.Load() {
			continue
		}
		now := time.Now().Add(time.Duration(s.skew.Load()))
		r := make([]byte, 48)
		r[0] = 0<<6 | 4<<3 | 4 // no leap warning, version 4, server
		r[1] = byte(s.stratum.Load())
		r[2], r[3] = 6, 0xec                          // poll 64 s, precision about 60 ns
		binary.BigEndian.PutUint32(r[4:], 1<<16/1000) // root delay 1 ms
		binary.BigEndian.PutUint32(r[8:], 1<<16/1000) // root dispersion 1 ms
		copy(r[12:16], "GPS\x00")                     // reference
		binary.BigEndian.PutUint64(r[16:], ntpTime(now.Add(-time.Second)))
		copy(r[24:32], buf[40:48]) // the client's transmit time is our origin
		binary.BigEndian.PutUint64(r[32:], ntpTime(now))
		binary.BigEndian.PutUint64(r[40:], ntpTime(now))
		s.conn.WriteToUDP(r, from)
	}
}

// fakeClock records how it is steered.
type fakeClock struct {
	mu     sync.Mutex
	skew   time.Duration
	steps  []time.Duration
	slews  []time.Duration
	synced int
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.skew) }
func (c *fakeClock) Step(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skew += d
	c.steps = append(c.steps, d)
	return nil
}
func (c *fakeClock) Slew(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slews = append(c.slews, d)
	return nil
}
func (c *fakeClock) Synced(time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.synced++
	return nil
}

type noted struct {
	mu  sync.Mutex
	evs []string
}

func (n *noted) note(sev events.Severity, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evs = append(n.evs, sev.String()+": "+msg)
}

func (n *noted) all() string { n.mu.Lock(); defer n.mu.Unlock(); return strings.Join(n.evs, "\n") }

const twentyYears = 20 * 365 * 24 * time.Hour

func TestKeeperStepsOnceThenSlews(t *testing.T) {
	srv := startNTPServer(t, twentyYears)
	dead := startNTPServer(t, 0)
	dead.quiet.Store(true)
	clk := &fakeClock{}
	var ev noted
	save := filepath.Join(t.TempDir(), "time")
	var stepped []time.Duration
	k := &Keeper{Clock: clk, SaveFile: save, Note: ev.note, LossAfter: time.Nanosecond, Stepped: func(d time.Duration) { stepped = append(stepped, d) }}
	k.SetServers([]string{dead.addr(), srv.addr(), "ntp host"})

	k.Round()
	st := k.Status()
	if !st.Synced || st.Server != srv.addr() || st.Stratum != 2 || len(clk.steps) != 1 || len(clk.slews) != 0 {
		t.Fatalf("after the first round: %+v, steps %v, slews %v; want synced with %s by one step", st, clk.steps, clk.slews, srv.addr())
	}
	if d := clk.steps[0] - twentyYears; d > 50*time.Millisecond || d < -50*time.Millisecond {
		t.Errorf("stepped by %v, want 20 years (%v) within 50 ms", clk.steps[0], twentyYears)
	}
	if len(stepped) != 1 || stepped[0] != clk.steps[0] {
		t.Errorf("told of steps %v, want %v", stepped, clk.steps)
	}
	if st.StepSeconds < twentyYears.Seconds()-1 || st.FirstSync.IsZero() || st.Error != "" {
		t.Errorf("status after the step: %+v", st)
	}
	if !strings.Contains(ev.all(), "notice: clock synced with "+srv.addr()+" (stratum 2): stepped by ") {
		t.Errorf("events after the first sync:\n%s", ev.all())
	}
	b, err := os.ReadFile(save)
	var kept time.Time
	if err != nil || kept.UnmarshalText([]byte(strings.TrimSpace(string(b)))) != nil || kept.Before(time.Now().Add(twentyYears-time.Minute)) {
		t.Errorf("time kept at the first sync: %q, %v; want 20 years ahead", b, err)
	}

	// Now close: slewed, never stepped again, not saved again within the hour.
	srv.skew.Store(int64(3 * time.Millisecond))
	os.Remove(save)
	k.Round()
	if st := k.Status(); !st.Synced || len(clk.steps) != 1 || len(clk.slews) != 1 || clk.slews[0] < 2*time.Millisecond || clk.slews[0] > 4*time.Millisecond {
		t.Errorf("second round: %+v, steps %v, slews %v; want one slew of about 3 ms", st, clk.steps, clk.slews)
	}
	srv.skew.Store(int64(5 * time.Second))
	k.Round()
	if len(clk.steps) != 1 || len(clk.slews) != 2 {
		t.Errorf("an offset of 5 s after the first sync: steps %v, slews %v; want it slewed", clk.steps, clk.slews)
	}
	if _, err := os.Stat(save); err == nil {
		t.Errorf("the time was kept again within the hour")
	}

	// No answer: the sync is lost, with an event and the reasons.
	srv.quiet.Store(true)
	k.Round()
	st = k.Status()
	if st.Synced || !strings.Contains(st.Error, "ntp host: address") || !strings.Contains(st.Error, dead.addr()+": ") {
		t.Errorf("no server answers: %+v", st)
	}
	if !strings.Contains(ev.all(), "warning: clock no longer synced") {
		t.Errorf("events after the loss:\n%s", ev.all())
	}
	srv.quiet.Store(false)
	k.Round()
	if st := k.Status(); !st.Synced || len(clk.steps) != 1 || !strings.Contains(ev.all(), "notice: clock synced again with") {
		t.Errorf("answers again: %+v, steps %v, events:\n%s", st, clk.steps, ev.all())
	}
}

// A kiss-of-death or unsynchronised server is not taken; the best root
// distance wins among the rest.
func TestKeeperRefusesBadAnswers(t *testing.T) {
	unsynced := startNTPServer(t, time.Hour)
	unsynced.stratum.Store(0) // a kiss-of-death
	good := startNTPServer(t, 200*time.Millisecond)
	clk := &fakeClock{}
	k := &Keeper{Clock: clk}
	k.SetServers([]string{unsynced.addr()})
	if w := k.Round(); k.Status().Synced || len(clk.steps)+len(clk.slews) != 0 || w != DefaultFirstPoll {
		t.Fatalf("only a kiss-of-death: %+v, steps %v slews %v, wait %v", k.Status(), clk.steps, clk.slews, w)
	}
	if w := k.Round(); w != 2*DefaultFirstPoll {
		t.Errorf("the wait after a second round without sync is %v, want %v", w, 2*DefaultFirstPoll)
	}
	k.SetServers([]string{unsynced.addr(), good.addr()})
	if w := k.Round(); !k.Status().Synced || k.Status().Server != good.addr() || w != DefaultPoll {
		t.Fatalf("with a good server too: %+v, wait %v", k.Status(), w)
	}
	if len(clk.steps) != 0 || len(clk.slews) != 1 {
		t.Errorf("an offset of 200 ms at the first sync: steps %v slews %v, want it slewed", clk.steps, clk.slews)
	}
	k.SetServers(nil)
	k.Round()
	if st := k.Status(); st.Error != "no NTP servers configured" || len(st.Servers) != 0 {
		t.Errorf("no servers: %+v", st)
	}
}

func TestRestore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "time")
	clk := &fakeClock{skew: -twentyYears} // a board that lost its time
	if d, err := Restore(path, clk); d != 0 || err != nil {
		t.Errorf("nothing kept: %v, %v", d, err)
	}
	if err := Save(path, time.Now()); err != nil {
		t.Fatal(err)
	}
	if d, err := Restore(path, clk); err != nil || d < twentyYears-time.Minute || len(clk.steps) != 1 {
		t.Errorf("restoring a kept time 20 years ahead: %v, %v", d, err)
	}
	if d, err := Restore(path, clk); d != 0 || err != nil || len(clk.steps) != 1 {
		t.Errorf("a clock ahead of the kept time: %v, %v, steps %v; want no step back", d, err, clk.steps)
	}
	os.WriteFile(path, []byte("yesterday\n"), 0o644)
	if _, err := Restore(path, clk); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a kept time that does not read: %v", err)
	}
}

// TestKeeperConditions: a server name that does not resolve is a
// condition with the resolver's reason, whether or not another server
// syncs the clock; servers that never answer well are clock_not_synced
// after the grace, and both end when the cause does.
func TestKeeperConditions(t *testing.T) {
	good := startNTPServer(t, time.Millisecond)
	nx := &net.OpError{Op: "dial", Net: "udp", Err: &net.DNSError{Err: "no such host", Name: "ntp.example.net", IsNotFound: true}}
	var told [][]health.Condition
	k := &Keeper{Clock: &fakeClock{}, Grace: time.Nanosecond,
		Conditions: func(c []health.Condition) { told = append(told, c) },
		Query: func(s string) (*ntp.Response, error) {
			if strings.HasPrefix(s, "ntp.example.net") {
				return nil, nx
			}
			return ntp.QueryWithOptions(s, ntp.QueryOptions{Timeout: time.Second})
		}}
	kinds := func() string {
		var out []string
		for _, c := range told[len(told)-1] {
			out = append(out, string(c.Kind)+": "+c.Detail)
		}
		return strings.Join(out, "\n")
	}
	k.SetServers([]string{"ntp.example.net"})
	k.Round()
	if got := kinds(); !strings.Contains(got, "name_unresolved: NTP servers whose names do not resolve: ntp.example.net: lookup ntp.example.net: no such host") ||
		!strings.Contains(got, "clock_not_synced: no NTP server answered well: ntp.example.net: ") {
		t.Errorf("an unresolvable name alone:\n%s", got)
	}
	since := told[0][0].Since
	k.Round()
	if told[1][0].Since != since {
		t.Errorf("the condition's start moved from %v to %v", since, told[1][0].Since)
	}
	k.SetServers([]string{"ntp.example.net", good.addr()})
	k.Round()
	if got := kinds(); strings.Contains(got, "clock_not_synced") || !strings.Contains(got, "name_unresolved") {
		t.Errorf("synced by the other server, the name still unresolved:\n%s", got)
	}
	k.SetServers([]string{good.addr()})
	k.Round()
	if got := kinds(); got != "" {
		t.Errorf("synced, every name resolved:\n%s", got)
	}
	// Without servers the box keeps the board's time: no condition.
	k.SetServers(nil)
	k.Round()
	if got := kinds(); got != "" {
		t.Errorf("no servers:\n%s", got)
	}
}
