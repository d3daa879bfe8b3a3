package bypasslab

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass"
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/lab"
)

// Binaries built once by TestMain when the lab can run (root).
var forwarderdBin, bypassdBin string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() == 0 {
			dir, err := os.MkdirTemp("", "ncpos-bypasslab-bin")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			if forwarderdBin, err = lab.BuildForwarderd(dir); err == nil {
				bypassdBin, err = BuildBypassd(dir)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// requireLab skips unless root; with NCPOS_REQUIRE_LAB=1 it fails instead.
func requireLab(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, testenv.Lab, "the lab")
}

var labSeq atomic.Int32

// Lab IDs start with "y", which no hex ID of the lab package's own tests
// can, so the two can run at the same time.
func labID() string { return fmt.Sprintf("y%03x", (os.Getpid()*8+int(labSeq.Add(1)))%4096) }

const holdDown = time.Second

// rig is a one-segment lab with forwarderd, bypassd (sim relay, 1s
// controller timer, 1s hold-down) and a receiver on side b; all of it is
// removed when the test ends, failed or not.
type rig struct {
	t    *testing.T
	l    *lab.Lab
	dir  string
	fwd  *lab.Daemon
	bp   *Bypassd
	recv *Receiver
	seq  uint64
}

func newRig(t *testing.T, bypassdFlags ...string) *rig {
	t.Helper()
	requireLab(t)
	l, err := lab.New(lab.Config{ID: labID(), Segments: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, l: l, dir: t.TempDir()}
	t.Cleanup(func() {
		if r.bp != nil {
			r.bp.Kill()
		}
		if r.fwd != nil {
			r.fwd.Kill()
		}
		if r.recv != nil {
			r.recv.Close()
		}
		if t.Failed() {
			for _, f := range []string{"forwarderd.log", "bypassd.log"} {
				b, _ := os.ReadFile(r.dir + "/" + f)
				t.Logf("%s:\n%s", f, b)
			}
		}
		if err := l.Close(); err != nil {
			t.Errorf("cleaning up the lab: %v", err)
		}
	})
	if err := l.Hostify(); err != nil {
		t.Fatal(err)
	}
	r.startForwarderd()
	r.startBypassd(bypassdFlags...)
	if r.recv, err = NewReceiver(l, 0, 1); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) startForwarderd() {
	r.t.Helper()
	d, err := r.l.StartForwarderd(forwarderdBin, r.dir, "-interval", "200ms")
	if err != nil {
		r.t.Fatal(err)
	}
	r.fwd = d
	if err := d.WaitHealthy(15 * time.Second); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) startBypassd(extra ...string) {
	r.t.Helper()
	d, err := StartBypassd(r.l, bypassdBin, r.dir, append([]string{"-hold-down", holdDown.String(), "-sim-timer", "1s"}, extra...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.bp = d
}

func (r *rig) wait(state bypassapi.State, timeout time.Duration) bypassapi.PairStatus {
	r.t.Helper()
	p, err := r.bp.WaitPair(0, state, timeout)
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// passes sends n frames and wants all of them across.
func (r *rig) passes(what string, n int) {
	r.t.Helper()
	r.recv.Reset()
	base := r.seq
	r.seq += uint64(n)
	if err := Send(r.l, 0, base, n); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for r.recv.Count() < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: %d of %d frames crossed", what, r.recv.Count(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// blocked sends n frames and wants none across.
func (r *rig) blocked(what string, n int) {
	r.t.Helper()
	r.recv.Reset()
	base := r.seq
	r.seq += uint64(n)
	if err := Send(r.l, 0, base, n); err != nil {
		r.t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if c := r.recv.Count(); c > 0 {
		r.t.Fatalf("%s: %d of %d frames crossed, want none", what, c, n)
	}
}

// forwarded reports how many frames forwarderd's datapath has passed
// (from its latest sample, taken every -interval).
func (r *rig) forwarded() uint64 {
	st, err := r.fwd.Status(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return st.Segments[0].Packets
}

// throughForwarder wants forwarderd's counters to show at least n more
// frames than before (they are sampled, so it waits a little).
func (r *rig) throughForwarder(what string, before uint64, n uint64) {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := r.forwarded() - before
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("%s: forwarderd counted %d frames of the %d that crossed", what, got, n)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKillFailsOverToBypass: frames cross through the forwarder (relay
// normal), SIGKILL forwarderd under traffic and frames resume through the
// relay; restart forwarderd and the relay goes back to normal after the
// hold-down, with frames through the forwarder again.
func TestKillFailsOverToBypass(t *testing.T) {
	r := newRig(t)
	r.wait(bypassapi.Normal, holdDown+10*time.Second)
	if att, _ := r.l.AttachedXDP(); len(att) != 2 {
		t.Fatalf("XDP attached on %v, want both ports", att)
	}
	before := r.forwarded()
	r.passes("through the forwarder", 50)
	r.throughForwarder("relay normal", before, 50)

	// Kill under traffic.
	r.recv.Reset()
	base := r.seq
	stream, err := StartStream(r.l, 0, time.Millisecond, base)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	mono, at := bypass.Monotonic(), time.Now()
	if err := r.fwd.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	stream.Stop()
	time.Sleep(50 * time.Millisecond)
	sent := stream.Sent()
	r.seq += uint64(len(sent))
	info, err := Relay(r.l, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := Analyse(at, RelayTime(info.FirstCarried, mono, at), base, sent, r.recv.Arrivals())
	t.Logf("SIGKILL: first frame through the relay received %v after the kill (relay carried it at %v), %d of %d frames lost",
		o.Gap, o.RelayAfter, o.Lost, o.Sent)
	if !o.Resumed || o.FirstAt.Sub(at) > 900*time.Millisecond {
		t.Fatalf("traffic did not resume through the relay within 900ms of the kill: %+v", o)
	}
	p := r.wait(bypassapi.Bypass, time.Second)
	if !strings.Contains(p.Cause, "forwarder unhealthy") {
		t.Errorf("bypass cause %q", p.Cause)
	}
	if att, _ := r.l.AttachedXDP(); len(att) != 0 {
		t.Fatalf("XDP still attached: %v", att)
	}
	r.passes("through the relay with forwarderd dead", 50)

	// Restart: normal again only after the hold-down.
	r.startForwarderd()
	healthyAt := time.Now()
	p = r.wait(bypassapi.Normal, holdDown+10*time.Second)
	if d := p.Since.Sub(healthyAt); d < holdDown-300*time.Millisecond {
		t.Errorf("back to normal %v after forwarderd was healthy, before the %v hold-down", d, holdDown)
	}
	before = r.forwarded()
	r.passes("through the restarted forwarder", 50)
	r.throughForwarder("restarted forwarderd", before, 50)
}

// TestStopAndContinue: SIGSTOP forwarderd (hung: its XDP programs stay,
// its socket stops answering) puts the relay in bypass; SIGCONT brings it
// back to normal after the hold-down.
func TestStopAndContinue(t *testing.T) {
	r := newRig(t)
	r.wait(bypassapi.Normal, holdDown+10*time.Second)
	pid := r.fwd.Pid()
	stopped := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { syscall.Kill(pid, syscall.SIGCONT) }
	defer cont()
	p := r.wait(bypassapi.Bypass, 2*time.Second)
	t.Logf("SIGSTOP: relay in bypass %v after the stop: %s", p.Since.Sub(stopped), p.Cause)
	if !strings.Contains(p.Cause, "forwarder unhealthy") {
		t.Errorf("bypass cause %q", p.Cause)
	}
	r.passes("with forwarderd stopped", 50)

	// Stays in bypass while stopped.
	time.Sleep(holdDown + 200*time.Millisecond)
	if p, _ := r.bp.Pair(0); p.State != bypassapi.Bypass {
		t.Fatalf("relay %s while forwarderd is stopped", p.State)
	}
	cont()
	if err := r.fwd.WaitHealthy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	healthyAt := time.Now()
	p = r.wait(bypassapi.Normal, holdDown+10*time.Second)
	if d := p.Since.Sub(healthyAt); d < holdDown-300*time.Millisecond {
		t.Errorf("normal %v after forwarderd answered again, before the %v hold-down", d, holdDown)
	}
	r.passes("after SIGCONT", 50)
}

// TestBypassdKilled: with bypassd gone nobody kicks the sim controller's
// timer, so the relay falls to bypass by itself; then even with forwarderd
// killed too (no ncpos process left) frames cross through the relay.
func TestBypassdKilled(t *testing.T) {
	r := newRig(t)
	r.wait(bypassapi.Normal, holdDown+10*time.Second)
	if info, err := Relay(r.l, 0); info.State != bypassapi.Normal || info.Expired || err != nil {
		t.Fatalf("relay %+v: %v", info, err)
	}
	if err := r.bp.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The timer is 1s, kicked every third of it: give it 1.5s.
	time.Sleep(1500 * time.Millisecond)
	info, err := Relay(r.l, 0)
	if err != nil || info.State != bypassapi.Bypass || !info.Expired {
		t.Fatalf("%v after bypassd died the relay reads %+v: %v", time.Since(killed), info, err)
	}
	r.passes("bypassd dead, forwarderd alive", 20)
	if err := r.fwd.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if att, _ := r.l.AttachedXDP(); len(att) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("XDP still attached")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.passes("no ncpos process alive, the relay carries it", 50)

	// A new bypassd adopts the relay and, with no forwarder, keeps it in
	// bypass.
	r.startBypassd()
	time.Sleep(holdDown + 300*time.Millisecond)
	if p, _ := r.bp.Pair(0); p.State != bypassapi.Bypass {
		t.Errorf("restarted bypassd without forwarder: %s (%s)", p.State, p.Cause)
	}
	r.passes("restarted bypassd, no forwarder", 20)
}

// TestNormalWithoutForwarder: a relay forced to normal by override while
// forwarderd is dead passes nothing (the tc path is out of the way), and
// clearing the override brings traffic back through the relay.
func TestNormalWithoutForwarder(t *testing.T) {
	r := newRig(t)
	r.wait(bypassapi.Normal, holdDown+10*time.Second)
	r.fwd.Kill()
	r.wait(bypassapi.Bypass, 2*time.Second)
	ctx := context.Background()
	if _, err := r.bp.Ctl.Override(ctx, bypassapi.OverrideRequest{Pair: "pair0", State: bypassapi.Normal, Reason: "lab: relay out of the way", By: "test"}); err != nil {
		t.Fatal(err)
	}
	r.blocked("normal with forwarderd dead", 20)
	if _, err := r.bp.Ctl.ClearOverride(ctx, "pair0", "test"); err != nil {
		t.Fatal(err)
	}
	r.wait(bypassapi.Bypass, time.Second)
	r.passes("override cleared", 20)
	// A planned update (as SIGTERM does) holds bypass even when healthy.
	r.startForwarderd()
	r.wait(bypassapi.Normal, holdDown+10*time.Second)
	if _, err := r.bp.Ctl.Plan(ctx, "update", "lab"); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.bp.Pair(0); p.State != bypassapi.Bypass {
		t.Errorf("planned update: %s", p.State)
	}
	if err := r.bp.Stop(); err != nil {
		t.Errorf("bypassd SIGTERM: %v", err)
	}
	r.bp = nil
	if info, err := Relay(r.l, 0); info.State != bypassapi.Bypass || err != nil {
		t.Errorf("after bypassd stopped: relay %+v, %v", info, err)
	}
}

// TestFailover runs the measurement behind `ncpos lab failover`, briefly.
func TestFailover(t *testing.T) {
	requireLab(t)
	var out, sum strings.Builder
	rep, err := Failover(context.Background(), FailoverOptions{Forwarderd: forwarderdBin, Bypassd: bypassdBin, RunDir: t.TempDir(),
		ID: labID(), Reps: 2, Out: &out})
	t.Logf("\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	rep.Print(&sum)
	t.Logf("\n%s", sum.String())
	for _, x := range rep.Reps {
		if !x.Resumed || x.Relay != bypassapi.Bypass || x.Lost >= x.Sent || x.Gap < x.RelayAfter-ClockSkew {
			t.Errorf("repetition %+v", x)
		}
	}
}

func TestSeqFrame(t *testing.T) {
	for _, seq := range []uint64{0, 1, 1<<32 - 1, 7<<32 + 12345, 1<<48 - 1} {
		if got, ok := parseSeq(SeqFrame(seq)); !ok || got != seq {
			t.Errorf("frame %d read back as %d, %v", seq, got, ok)
		}
	}
	if _, ok := parseSeq(frames.UDPFrame(60, 1, 2)); ok {
		t.Error("a plain UDP frame read as a test frame")
	}
}
