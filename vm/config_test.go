package vm

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/config"
	evlog "github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/syslogtest"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
)

// configClient is statusd's API client for configuration changes.
func configClient(v *VM) *api.Client {
	return &api.Client{URL: v.StatusURL(), Password: testPassword, HTTP: v.Client(3 * time.Minute)}
}

// stream sends numbered frames into one cable at a steady pace and counts
// those that leave the other.
type stream struct {
	sent, got atomic.Int64
	paused    atomic.Bool // no more frames sent; the receiver goes on
	stop      chan struct{}
	once      sync.Once
	wg        sync.WaitGroup
	seen      sync.Map // sequence numbers that arrived
	mu        sync.Mutex
	sentAt    map[uint32]time.Time // by sequence number
}

// halt stops the stream's goroutines and waits for them.
func (s *stream) halt() {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
}

// startStream sends a 128-byte frame every interval from a to b until
// stop, and counts the frames of this stream that b's cable carries.
func startStream(t *testing.T, a, b cable, interval time.Duration) *stream {
	s := &stream{stop: make(chan struct{}), sentAt: map[uint32]time.Time{}}
	t.Cleanup(s.halt)
	drain(b.conn)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for seq := uint32(0); ; seq++ {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			if s.paused.Load() {
				continue
			}
			f := frames.UDPFrame(128, 4000, 4001)
			bench.PutStamp(f, bench.Stamp{Trial: 35, Seq: seq})
			if err := a.send(f); err != nil {
				return // the cable closed: the test ended
			}
			s.mu.Lock()
			s.sentAt[seq] = time.Now()
			s.mu.Unlock()
			s.sent.Add(1)
		}
	}()
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 65536)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			b.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			n, _, err := b.conn.ReadFromUDP(buf)
			if err != nil {
				continue
			}
			if st, err := bench.ParseStamp(buf[:n]); err == nil && st.Trial == 35 {
				if _, dup := s.seen.LoadOrStore(st.Seq, true); !dup {
					s.got.Add(1)
				}
			}
		}
	}()
	return s
}

// end stops sending, waits for the last frames and says how many were
// sent and arrived.
func (s *stream) end(settle time.Duration) (sent, got int64) {
	s.paused.Store(true)
	time.Sleep(settle)
	s.halt()
	return s.sent.Load(), s.got.Load()
}

// lost says when each frame that did not arrive was sent, once the stream
// has ended.
func (s *stream) lost() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for seq, at := range s.sentAt {
		if _, ok := s.seen.Load(seq); !ok {
			out = append(out, at)
		}
	}
	return out
}

// crossesWithin sends frame from a to b every 100 ms until it arrives
// unchanged, for at most d; it returns how long that took, or false.
func crossesWithin(a, b cable, frame []byte, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	buf := make([]byte, 65536)
	for time.Since(start) < d {
		if err := a.send(frame); err != nil {
			return 0, false
		}
		b.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		for {
			n, _, err := b.conn.ReadFromUDP(buf)
			if err != nil {
				break
			}
			if bytes.Equal(buf[:n], frame) {
				return time.Since(start), true
			}
		}
	}
	return 0, false
}

// withSeg2 is the default configuration with seg2 on LAN3 and LAN4
// behind pair2, and extra settings of seg2's after its ports.
func withSeg2(extra string) string {
	return strings.Replace(string(config.DefaultTOML()), "\n[[segment]]",
		"\n[[segment]]\nname = \"seg2\"\nports = [\"LAN3\", \"LAN4\"]\nbypass = \"pair2\"\n"+extra+"\n[[segment]]", 1)
}

// TestConfigInPlace boots the default image with its four data ports on
// the test's cables and, while a paced stream crosses seg1, applies a
// configuration that adds seg2 and then one that raises seg2's MTU: seg1
// loses no frame of the stream, no daemon restarts, the box does not
// reboot, and seg2 forwards a QinQ frame bit for bit after each change
// (and a jumbo frame after the second). The versions, their states and
// the events say what happened; a stale apply gets 409.
func TestConfigInPlace(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	img := testImage(t, "default", config.DefaultTOML())
	cables, wires := newCables(t, 4)
	v, _ := boot(t, img, false, func(o *Options) { o.Wires = wires })
	s := waitForwardingNormally(t, v, 5*time.Minute, "seg1")
	up := time.Now().Add(-time.Duration(s.System.UptimeSeconds * float64(time.Second)))
	pids := daemonPIDs(t, v)
	c := configClient(v)
	ctx := context.Background()
	cur, err := c.Config(ctx)
	if err != nil || cur.Version != 0 {
		t.Fatalf("configuration in force: %+v, %v", cur, err)
	}

	st := startStream(t, cables[0], cables[1], 10*time.Millisecond)
	time.Sleep(2 * time.Second)
	qinq := frames.QinQ(frames.UDPFrame(1514, 1000, 2002), 100, 200)
	apply := func(what, text string, replaces int) *api.ConfigApplied {
		t.Helper()
		start := time.Now()
		within := 600
		res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: text, Replaces: replaces, ConfirmWithin: &within, Comment: what})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: version %d %s in %v, taken by %v (ms); changes %+v", what, res.Version.Number, res.Version.State,
			time.Since(start).Round(time.Millisecond), res.TookMS, res.Changes)
		if _, ok := crossesWithin(cables[2], cables[3], qinq, v.Within(time.Minute)); !ok {
			t.Fatalf("%s: no QinQ frame crossed seg2 unchanged within a minute: %s", what, conditionList(snapshot(t, v)))
		}
		t.Logf("%s: seg2 forwarded a 1522-byte QinQ frame bit for bit %v after the apply", what, (time.Since(start)).Round(time.Millisecond))
		waitForwardingNormally(t, v, time.Minute, "seg2")
		t.Logf("%s: seg2 forwarding with its relay normal (after the hold-down) %v after the apply", what, time.Since(start).Round(100*time.Millisecond))
		return res
	}
	v2 := apply("seg2 added", withSeg2(""), 0)
	// One change at a time: the next waits for this one's confirmation.
	_, err = c.ApplyConfig(ctx, api.ConfigApply{Text: withSeg2("mtu = 9000\n"), Replaces: v2.Version.Number})
	if cf, ok := api.Conflict(err); !ok || cf.Reason != api.ConfigBusy || cf.Version != v2.Version.Number {
		t.Errorf("a change while version %d waits: %v, want 409 busy", v2.Version.Number, err)
	}
	if _, err := c.ConfirmConfig(ctx, v2.Version.Number); err != nil {
		t.Fatal(err)
	}
	v3 := apply("seg2's MTU raised", withSeg2("mtu = 9000\n"), v2.Version.Number)
	if _, ok := crossesWithin(cables[2], cables[3], frames.UDPFrame(9014, 1000, 2003), v.Within(10*time.Second)); !ok {
		t.Error("a 9014-byte frame did not cross seg2 after its MTU was raised to 9000")
	}
	// seg2 was re-attached for its MTU: its relay went through bypass
	// meanwhile, as bypassd's own log says (the events come from the
	// monitor's samples, which a hold shorter than a second can fall
	// between).
	var logs struct{ Daemons []ipc.DaemonLog }
	getAPI(t, v, "api/v1/logs?daemon=bypassd&limit=200", &logs)
	held := false
	for _, d := range logs.Daemons {
		for _, l := range d.Lines {
			held = held || (strings.Contains(l.Text, "pair2") && strings.Contains(l.Text, "override to bypass") && strings.Contains(l.Text, "configuration change"))
		}
	}
	if !held {
		t.Error("bypassd's log does not say seg2's relay went to bypass for the configuration change that re-attached it")
	}
	if _, err := c.ConfirmConfig(ctx, v3.Version.Number); err != nil {
		t.Fatal(err)
	}
	// A change that replaces a version no longer in force is refused.
	_, err = c.ApplyConfig(ctx, api.ConfigApply{Text: string(config.DefaultTOML()), Replaces: v2.Version.Number})
	if cf, ok := api.Conflict(err); !ok || cf.Reason != api.ConfigStale || cf.Version != v3.Version.Number {
		t.Errorf("a change replacing version %d: %v, want 409 stale naming %d", v2.Version.Number, err, v3.Version.Number)
	}
	time.Sleep(2 * time.Second)
	sent, got := st.end(v.Within(2 * time.Second))
	t.Logf("seg1: %d of %d frames of the stream arrived while seg2 was added and changed", got, sent)
	if got != sent {
		t.Errorf("seg1 lost %d of %d frames while seg2 changed", sent-got, sent)
	}

	s = snapshot(t, v)
	if up2 := time.Now().Add(-time.Duration(s.System.UptimeSeconds * float64(time.Second))); up2.Sub(up).Abs() > 5*time.Second {
		t.Errorf("the box rebooted: up since %v, before since %v", up2, up)
	}
	if after := daemonPIDs(t, v); !maps.Equal(pids, after) {
		t.Errorf("daemons restarted: process IDs before %v, after %v", pids, after)
	}
	if !forwardingNormally(s, "seg1") || !forwardingNormally(s, "seg2") {
		t.Errorf("after the changes: %s", conditionList(s))
	}
	h, err := c.ConfigHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, ver := range h.Versions {
		states = append(states, string(ver.State))
	}
	if len(h.Versions) != 3 || strings.Join(states, ",") != "confirmed,confirmed,confirmed" || h.Versions[1].State != api.VersionConfirmed ||
		!strings.Contains(h.Versions[0].Diff, "+mtu = 9000") {
		t.Errorf("history: %d versions %v, the newest's diff:\n%s", len(h.Versions), states, h.Versions[0].Diff)
	}
}

// daemonPIDs reads each daemon's process ID, by name, from its latest
// log line: a daemon that restarts logs under a new one.
func daemonPIDs(t *testing.T, v *VM) map[string]int {
	t.Helper()
	var logs struct{ Daemons []ipc.DaemonLog }
	getAPI(t, v, "api/v1/logs?limit=1", &logs)
	out := map[string]int{}
	for _, d := range logs.Daemons {
		out[d.Daemon] = d.PID
	}
	return out
}

// TestConfigRevert first has Debian's lldpd at both ends of seg1, which
// the box shows as the ports' neighbours, in the API and in SNMP (see
// checkLLDP), and captures LLDP frames on the box (checkCapture). Then it changes the box's configuration as an operator
// would, mistakes included. SNMP and syslog change in place: the new
// community answers, the old one does not, syslog receives the box's
// events, and no segment or relay changes state. A change that moves seg1
// onto a port without a cable reverts by itself long before its deadline;
// one that moves the management address where the host cannot reach it,
// never confirmed, cuts the host off and reverts when its deadline
// passes, the box answering on its old address again; a rollback goes
// back to the configuration the box booted on. The history and the
// events say so.
func TestConfigRevert(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	collector := syslogtest.Listen(t, "udp")
	base := strings.Replace(string(config.DefaultTOML()), "community = \"\"", "community = \"noc-read-old\"", 1)
	img := testImage(t, "config-revert", []byte(base))
	snmpPort, err := FreeUDPPort()
	if err != nil {
		t.Fatal(err)
	}
	cables, wires := newCables(t, 4)
	v, _ := boot(t, img, false, func(o *Options) {
		o.Wires = wires
		o.UDPForwards = map[int]int{snmpPort: 161}
	})
	waitForwardingNormally(t, v, 5*time.Minute, "seg1")
	// Before any change: Debian's lldpd at both ends of seg1, and a
	// capture of the LLDP frames crossing.
	t.Run("lldp and capture", func(t *testing.T) {
		checkLLDP(t, v, snmpPort, "noc-read-old", cables[0], cables[1])
		checkCapture(t, v)
	})
	sysName := func(community string) error {
		_, err := snmpTool(t, snmpPort, "snmpget", "-v2c", "-c", community, "-Oqv", "1.3.6.1.2.1.1.5.0") // sysName.0
		return err
	}
	if err := sysName("noc-read-old"); err != nil {
		t.Fatalf("the image's community: %v", err)
	}
	c := configClient(v)
	ctx := context.Background()
	now := 0 // the version in force
	apply := func(what, text string, within int) *api.ConfigApplied {
		t.Helper()
		res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: text, Replaces: now, ConfirmWithin: &within, Comment: what})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: version %d %s, taken by %v (ms)", what, res.Version.Number, res.Version.State, res.TookMS)
		return res
	}

	// SNMP and syslog, in place.
	seg1Before := segmentOf(snapshot(t, v), "seg1").Bypass.Since
	next := strings.Replace(base, "noc-read-old", "noc-read-new", 1)
	next = strings.Replace(next, "target = \"\"", fmt.Sprintf("target = \"udp://10.0.2.2:%d\"", collector.Addr.Port), 1)
	res := apply("SNMP community and syslog", next, 600)
	if _, err := c.ConfirmConfig(ctx, res.Version.Number); err != nil {
		t.Fatal(err)
	}
	now = res.Version.Number
	if err := sysName("noc-read-new"); err != nil {
		t.Errorf("the new community: %v", err)
	}
	if err := sysName("noc-read-old"); err == nil {
		t.Error("the old community still answers")
	}
	confirmed := regexp.MustCompile(fmt.Sprintf(`configuration version %d confirmed by`, res.Version.Number))
	for deadline := time.Now().Add(v.Within(30 * time.Second)); collector.Count(confirmed) == 0; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("syslog received no line saying version %d was confirmed; it has:\n%s", res.Version.Number, strings.Join(collector.All(), "\n"))
		}
	}
	s := snapshot(t, v)
	if !forwardingNormally(s, "seg1") || !segmentOf(s, "seg1").Bypass.Since.Equal(seg1Before) {
		t.Errorf("seg1 changed state with SNMP and syslog: %s, relay since %v, before %v", conditionList(s), segmentOf(s, "seg1").Bypass.Since, seg1Before)
	}

	// seg1 moved onto LAN4, whose cable is out: reverted for seg1 not
	// forwarding, well before the deadline.
	if err := v.SetLink("lan4", false); err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(next, "ports = [\"LAN1\", \"LAN2\"]", "ports = [\"LAN1\", \"LAN4\"]", 1)
	moved = strings.Replace(moved, "bypass = \"pair1\"", "bypass = \"\"", 1)
	start := time.Now()
	res = apply("seg1 onto LAN4", moved, 600)
	ver := waitSettledOnBox(t, c, res.Version.Number, v.Within(2*time.Minute))
	t.Logf("seg1 onto a port without a cable: %s %v after the apply: %s", ver.State, time.Since(start).Round(time.Second), ver.Reason)
	if ver.State != api.VersionReverted || !strings.Contains(ver.Reason, "seg1") {
		t.Errorf("seg1 onto a port without a cable: %+v, want reverted naming seg1", ver)
	}
	if err := v.SetLink("lan4", true); err != nil {
		t.Fatal(err)
	}
	if cur, err := c.Config(ctx); err != nil || cur.Version != now {
		t.Errorf("after the revert version %+v is in force (%v), want %d", cur, err, now)
	}
	waitForwardingNormally(t, v, time.Minute, "seg1")

	// The management address moved where the host cannot reach it, and
	// never confirmed: the host is cut off once the old address has
	// lingered, and the box answers on it again by itself when the
	// deadline passes.
	away := strings.Replace(next, "dhcp = true", "dhcp = false", 1)
	away = strings.Replace(away, "address = \"\"", "address = \"10.0.9.15/24\"", 1)
	away = strings.Replace(away, "gateway = \"\"", "gateway = \"10.0.9.2\"", 1)
	start = time.Now()
	res = apply("management address moved away, not confirmed", away, 60)
	deadline := res.Version.Deadline
	quick := &api.Client{URL: v.StatusURL(), Password: testPassword, HTTP: v.Client(5 * time.Second)}
	for end := time.Now().Add(v.Within(time.Minute)); ; time.Sleep(time.Second) {
		if _, err := quick.Config(ctx); err != nil {
			t.Logf("management address moved away: the host cut off %v after the apply (%v)", time.Since(start).Round(time.Second), err)
			break
		}
		if time.Now().After(end) {
			t.Fatal("the box still answers on its old address a minute after it moved away")
		}
	}
	if time.Now().After(deadline) {
		t.Fatalf("the host was cut off only after the deadline %v: the test proves nothing", deadline)
	}
	for end := deadline.Add(v.Within(2 * time.Minute)); ; time.Sleep(time.Second) {
		if _, err := quick.Config(ctx); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the box did not answer on its old address again within 2 min of the deadline %v", deadline)
		}
	}
	t.Logf("management address moved away: answering on the old address %v after the deadline", time.Since(deadline).Round(time.Second))
	ver = waitSettledOnBox(t, c, res.Version.Number, v.Within(time.Minute))
	t.Logf("management address moved away: %s %v after its deadline: %s", ver.State, ver.Done.Sub(deadline).Round(time.Millisecond), ver.Reason)
	if ver.State != api.VersionReverted || !strings.Contains(ver.Reason, "deadline") || ver.Done.Before(deadline) {
		t.Errorf("a management address never confirmed: %+v, want reverted after its deadline %v", ver, deadline)
	}
	if cur, err := c.Config(ctx); err != nil || cur.Version != now {
		t.Errorf("after the revert version %+v is in force (%v), want %d", cur, err, now)
	}

	// A rollback to the configuration the box booted on, confirmed at
	// once: the old community answers again.
	within := 0
	rb, err := c.RollbackConfig(ctx, api.ConfigRollback{Version: 1, Replaces: now, ConfirmWithin: &within})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Version.State != api.VersionConfirmed || rb.Version.Comment != "rollback to version 1" {
		t.Errorf("rollback: %+v", rb.Version)
	}
	if err := sysName("noc-read-old"); err != nil {
		t.Errorf("after the rollback, the old community: %v", err)
	}
	h, err := c.ConfigHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, ver := range h.Versions {
		states = append(states, fmt.Sprintf("%d %s", ver.Number, ver.State))
	}
	if want := "5 confirmed,4 reverted,3 reverted,2 confirmed,1 confirmed"; strings.Join(states, ",") != want {
		t.Errorf("history %q, want %q", strings.Join(states, ","), want)
	}
	var evs struct{ Events []evlog.Event }
	getAPI(t, v, "api/v1/events?limit=200", &evs)
	var said []string
	for _, e := range evs.Events {
		if e.Kind == evlog.KindConfig && strings.Contains(e.Message, "reverted") {
			said = append(said, e.Message)
		}
	}
	if len(said) != 2 {
		t.Errorf("events of the reverts: %q, want two", said)
	}
}

// waitForwardingNormally waits until every one of segs forwards with its
// relay normal and returns the status that says so.
func waitForwardingNormally(t *testing.T, v *VM, within time.Duration, segs ...string) *api.Snapshot {
	t.Helper()
	if len(segs) == 0 {
		t.Fatal("waitForwardingNormally: no segment to wait for")
	}
	for deadline := time.Now().Add(v.Within(within)); ; time.Sleep(time.Second) {
		s := snapshot(t, v)
		if !slices.ContainsFunc(segs, func(seg string) bool { return !forwardingNormally(s, seg) }) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not forwarding normally within %v: %s", strings.Join(segs, " and "), within, conditionList(s))
		}
	}
}

// waitSettledOnBox waits until version n is confirmed or reverted.
func waitSettledOnBox(t *testing.T, c *api.Client, n int, within time.Duration) api.Version {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(500 * time.Millisecond) {
		h, err := c.ConfigHistory(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range h.Versions {
			if v.Number == n && v.State != api.VersionPending {
				return v.Version
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("version %d still pending after %v", n, within)
		}
	}
}

// TestConfigPowerCut cuts the power (QEMU killed) while the box writes a
// configuration version to /perm, at several points of the writes, with
// the box's disk slowed down as a CF card is: the box comes up on the
// version before or on the new one, whole, never on a torn file, and its
// history reads back without a damaged record. A version applied with a
// deadline and cut off before its confirmation comes up on the version
// before, and the history says it was reverted.
func TestConfigPowerCut(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	img := testImage(t, "default", config.DefaultTOML())
	disk := filepath.Join(t.TempDir(), "box.img")
	if err := exec.Command("cp", "--sparse=always", img, disk).Run(); err != nil {
		t.Fatal(err)
	}
	noSnapshot := func(o *Options) { o.Snapshot = false }
	v, _ := boot(t, disk, false, noSnapshot)
	ctx := context.Background()
	texts := map[string]bool{string(config.DefaultTOML()): true}
	outcome := map[string]int{}
	// The last point lies past every write: the cut comes once the
	// apply has answered.
	for i, at := range []uint64{0, 4 << 10, 16 << 10, 64 << 10, 1 << 40} {
		c := configClient(v)
		cur, err := c.Config(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next := strings.Replace(string(config.DefaultTOML()), "hold_down = \"5s\"", fmt.Sprintf("hold_down = \"%ds\"", 6+i), 1)
		texts[next] = true
		if err := v.ThrottleDiskWrites(20e3); err != nil {
			t.Fatal(err)
		}
		start, _, err := v.DiskWrites()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			within := 0 // confirmed at once: the version, the file the box boots on, the last good one
			_, err := c.ApplyConfig(ctx, api.ConfigApply{Text: next, Replaces: cur.Version, ConfirmWithin: &within, Comment: fmt.Sprintf("cut at %d", at)})
			done <- err
		}()
		var written uint64
		for deadline := time.Now().Add(v.Within(2 * time.Minute)); ; time.Sleep(5 * time.Millisecond) {
			n, _, err := v.DiskWrites()
			if err != nil {
				t.Fatal(err)
			}
			written = n - start
			if written >= at && (at > 0 || n > start) {
				break
			}
			select {
			case err := <-done:
				t.Logf("cut at %d bytes: the apply ended first (%v), with %d bytes written", at, err, written)
				deadline = time.Time{}
			default:
			}
			if time.Now().After(deadline) {
				break
			}
		}
		v.Kill()
		v, _ = boot(t, disk, false, noSnapshot)
		c = configClient(v)
		now, err := c.Config(ctx)
		if err != nil {
			t.Fatal(err)
		}
		state := "the version before"
		switch {
		case now.Text == next:
			state = "the new version"
		case now.Text != cur.Text:
			state = "another text"
		}
		outcome[state]++
		t.Logf("power cut %d bytes into the writes of version %d's apply: the box came up on %s (version %d, from %s)", written, cur.Version+1, state, now.Version, now.Source)
		if !texts[now.Text] || state == "another text" {
			t.Fatalf("after the power cut the box runs a configuration that is neither the one before nor the new one:\n%s", now.Text)
		}
		h, err := c.ConfigHistory(ctx)
		if err != nil || len(h.Errors) > 0 {
			t.Fatalf("history after the power cut: %v %v", err, h.Errors)
		}
		for _, ver := range h.Versions {
			if ver.State == api.VersionPending {
				// statusd settles it as it starts.
				if got := waitSettledOnBox(t, c, ver.Number, v.Within(time.Minute)); (got.State == api.VersionConfirmed) != (state == "the new version") {
					t.Errorf("version %d, cut off, was settled %s (%s) while the box runs %s", got.Number, got.State, got.Reason, state)
				}
			}
		}
	}
	t.Logf("outcomes: %v", outcome)
	if outcome["the new version"] == 0 {
		t.Error("no cut, not even the one after the apply answered, came up on the new version")
	}

	// A change with a deadline, cut off before it was confirmed: the box
	// boots on the version before and the history says the change was
	// reverted.
	c := configClient(v)
	cur, err := c.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := regexp.MustCompile(`(?m)^hold_down = "\d+s"`).ReplaceAllString(cur.Text, `hold_down = "11s"`)
	within := 600
	res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: next, Replaces: cur.Version, ConfirmWithin: &within})
	if err != nil {
		t.Fatal(err)
	}
	v.Kill() // the version is on the disk: the box answers once it is

	v, _ = boot(t, disk, false, noSnapshot)
	c = configClient(v)
	now, err := c.Config(ctx)
	if err != nil || now.Text != cur.Text {
		t.Fatalf("after a power cut while version %d waited: %v, running version %d", res.Version.Number, err, now.Version)
	}
	ver := waitSettledOnBox(t, c, res.Version.Number, v.Within(time.Minute))
	if ver.State != api.VersionReverted || !strings.Contains(ver.Reason, "restarted") {
		t.Errorf("version %d after the power cut: %s (%s), want reverted for the restart", ver.Number, ver.State, ver.Reason)
	}
}

// TestConfigReboot applies a change only a boot takes (plain HTTP off):
// the box refuses it unless the caller lets it reboot; it then boots on it
// once, waiting for its confirmation, and boots back on the version before
// when the deadline passes. The history says so.
func TestConfigReboot(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	base := string(config.DefaultTOML())
	v, _ := boot(t, testImage(t, "config-reboot", []byte(base)), false)
	plain := func() error {
		resp, err := (&http.Client{Timeout: v.Within(5 * time.Second), CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}).Get(fmt.Sprintf("http://127.0.0.1:%d/", v.Options.HTTPPort))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := plain(); err != nil {
		t.Fatalf("plain HTTP before the change: %v", err)
	}
	c := configClient(v)
	ctx := context.Background()
	off := strings.Replace(base, "http_port = 80", "http_port = 0", 1)
	within := int(v.Within(100*time.Second) / time.Second)
	_, err := c.ApplyConfig(ctx, api.ConfigApply{Text: off, ConfirmWithin: &within})
	if cf, ok := api.Conflict(err); !ok || cf.Reason != api.ConfigRefused || !strings.Contains(cf.Error, "with a reboot") {
		t.Fatalf("a change only a boot takes, without a reboot: %v, want refused saying to apply it with a reboot", err)
	}

	asked := time.Now()
	res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: off, ConfirmWithin: &within, Reboot: true, Comment: "plain HTTP off"})
	if err != nil {
		// The answer races the reboot: the history tells.
		t.Logf("the answer to the apply was lost to the reboot: %v", err)
	} else if !res.Rebooting || res.Version.State != api.VersionPending || !res.Version.Reboot {
		t.Fatalf("applied with a reboot: %+v", res)
	}
	_, booted := waitReboot(t, v, asked, 3*time.Minute)
	t.Logf("rebooted into the change %v after the apply", booted.Sub(asked).Round(time.Second))
	cur, err := c.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.ConfigHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending := h.Versions[0].Version
	if cur.Version != 2 || !strings.Contains(cur.Source, "trial") || pending.Number != 2 || pending.State != api.VersionPending {
		t.Fatalf("after the reboot: version %d in force from %q, newest %+v; want version 2, pending, booted once", cur.Version, cur.Source, pending)
	}
	if err := plain(); err == nil {
		t.Error("plain HTTP still answers on the version that turns it off")
	}

	// Never confirmed: back on version 1 by a reboot at the deadline.
	_, back := waitReboot(t, v, pending.Deadline, time.Until(pending.Deadline)+3*time.Minute)
	t.Logf("rebooted back %v after the deadline", back.Sub(pending.Deadline).Round(time.Second))
	if cur, err = c.Config(ctx); err != nil || cur.Version != 1 {
		t.Fatalf("after the revert: version %+v in force (%v), want 1", cur, err)
	}
	if h, err = c.ConfigHistory(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.Versions[0].Version; got.Number != 2 || got.State != api.VersionReverted || !strings.Contains(got.Reason, "deadline") {
		t.Errorf("history after the revert: %+v, want version 2 reverted for its deadline", got)
	}
	if err := plain(); err != nil {
		t.Errorf("plain HTTP after the revert: %v", err)
	}
}
