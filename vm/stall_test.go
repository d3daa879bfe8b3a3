package vm

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	evlog "github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
)

// stallWatch fails the test if seg1 shows tx_stalled or leaves normal
// while it polls; it says so once, with what it saw first.
type stallWatch struct {
	t      *testing.T
	v      *VM
	from   uint64 // the newest event's sequence number when the watch began
	failed bool
}

func newStallWatch(t *testing.T, v *VM) *stallWatch {
	w := &stallWatch{t: t, v: v}
	for _, e := range w.events() {
		w.from = max(w.from, e.Seq)
	}
	return w
}

func (w *stallWatch) events() []evlog.Event {
	var evs struct{ Events []evlog.Event }
	getAPI(w.t, w.v, "api/v1/events?limit=200", &evs)
	return evs.Events
}

func (w *stallWatch) check(during string) {
	w.t.Helper()
	s := snapshot(w.t, w.v)
	if !w.failed && (hasCondition(s, health.TxStalled, "seg1", "") || !forwardingNormally(s, "seg1")) {
		w.failed = true
		w.t.Errorf("%s: seg1 not forwarding normally: %s", during, conditionList(s))
	}
}

// hold polls for d.
func (w *stallWatch) hold(during string, d time.Duration) {
	w.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(500 * time.Millisecond)
		w.check(during)
	}
}

// began is every tx_stalled condition and bypass change since the watch
// started, from the event log (the polls can miss a short one).
func (w *stallWatch) began() []evlog.Event {
	var out []evlog.Event
	for _, e := range w.events() {
		stalled := e.Kind == evlog.KindCondition && e.Fields["condition"] == string(health.TxStalled)
		if e.Seq > w.from && (stalled || e.Kind == evlog.KindBypass) {
			out = append(out, e)
		}
	}
	return out
}

// checkNoFalseStall sends into LAN1 (an 82574L) what a user sent when
// seg1 went to bypass for a transmit stall that was none: bursts of 500
// untagged, 500 802.1Q and 500 QinQ frames of the longest size each,
// at 2000 frames/s and 3 s apart; then frames whose headers are cut off,
// 5 a second, which the emulated 82574L drops on transmit and counts
// nowhere. seg1 must stay forwarding normally throughout.
func checkNoFalseStall(t *testing.T, v *VM, lan1, lan2 cable) {
	t.Helper()
	w := newStallWatch(t, v)
	w.check("before the bursts")
	bursts := []struct {
		name  string
		frame []byte
	}{
		{"untagged 1514 B", frames.UDPFrame(1514, 1000, 3001)},
		{"802.1Q 1518 B", frames.VLAN(frames.UDPFrame(1514, 1000, 3002), 42)},
		{"QinQ 1522 B", frames.QinQ(frames.UDPFrame(1514, 1000, 3003), 100, 200)},
	}
	for _, b := range bursts {
		drain(lan2.conn)
		arrived := countArrivals(lan2.conn, len(b.frame))
		tick := time.NewTicker(500 * time.Microsecond)
		for range 500 {
			<-tick.C
			if err := lan1.send(b.frame); err != nil {
				t.Fatal(err)
			}
		}
		tick.Stop()
		w.hold("after a burst of "+b.name, 3*time.Second)
		t.Logf("burst of 500 %s frames: %d arrived on LAN2", b.name, arrived())
	}
	// An IPv4 header announcing 60 bytes (options) in a minimal frame,
	// and an IPv6 hop-by-hop header past the end of the frame.
	ipv4 := make([]byte, 46)
	ipv4[0] = 0x4f
	ipv6 := make([]byte, 42)
	ipv6[0], ipv6[5], ipv6[6] = 0x60, 8, 0
	cut := []struct {
		name  string
		frame []byte
	}{
		{"IPv4 options cut off", frames.Ethernet(frames.MACB, frames.MACA, 0x0800, ipv4)},
		{"IPv6 extension header cut off", frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, ipv6)},
	}
	for _, c := range cut {
		drain(lan2.conn)
		arrived := countArrivals(lan2.conn, 0)
		for range 30 {
			if err := lan1.send(c.frame); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			w.check("while frames with " + c.name + " entered")
		}
		w.hold("after frames with "+c.name, 2*time.Second)
		t.Logf("30 frames with %s: %d arrived on LAN2", c.name, arrived())
	}
	for _, e := range w.began() {
		t.Errorf("no transmit stalled, yet: %s %s", e.Time.Format("15:04:05"), e.Message)
	}
}

// countArrivals counts what the cable brings (frames of n bytes, or any
// if n is 0) until the function it returns is called, which says how many.
func countArrivals(c *net.UDPConn, n int) func() int {
	var got atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if k, _, err := c.ReadFromUDP(buf); err == nil && (n == 0 || k == n) {
				got.Add(1)
			}
		}
	}()
	return func() int {
		close(stop)
		<-done
		return int(got.Load())
	}
}

// checkRealStall stops LAN2's transmit unit (the 82574L's TCTL.EN) while
// well-formed frames enter LAN1 at 20 a second: seg1 must report
// tx_stalled on LAN2, and forward normally again once the unit runs.
func checkRealStall(t *testing.T, v *VM, lan1 cable, lan2 *api.Port) {
	t.Helper()
	post := func(op string) {
		t.Helper()
		resp, err := http.Post(hangctlURL(v)+op+"?port="+lan2.Interface, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("hangctl %s %s: %s: %s", op, lan2.Interface, resp.Status, body)
		}
		t.Logf("hangctl %s: %s", op, strings.TrimSpace(string(body)))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f := frames.UDPFrame(200, 1000, 3004)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				lan1.send(f)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	post("txoff")
	began := time.Now()
	restarted := false
	defer func() {
		if !restarted {
			post("txon")
		}
	}()
	var s *api.Snapshot
	for deadline := time.Now().Add(v.Within(20 * time.Second)); ; time.Sleep(500 * time.Millisecond) {
		s = snapshot(t, v)
		if hasCondition(s, health.TxStalled, "seg1", "LAN2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("LAN2's transmit stopped %v ago, no tx_stalled: %s", time.Since(began).Round(time.Second), conditionList(s))
		}
	}
	t.Logf("LAN2's transmit stopped: tx_stalled after %v", time.Since(began).Round(100*time.Millisecond))
	post("txon")
	restarted = true
	for deadline := time.Now().Add(v.Within(time.Minute)); ; time.Sleep(time.Second) {
		s = snapshot(t, v)
		if forwardingNormally(s, "seg1") && !hasCondition(s, health.TxStalled, "seg1", "") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seg1 not forwarding normally a minute after LAN2's transmit restarted: %s", conditionList(s))
		}
	}
}
