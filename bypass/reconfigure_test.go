package bypass

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/ipc/health"
)

// TestSupervisorReconfigure: a pair moved to another segment goes to
// bypass at once and back to normal after the new hold-down once that
// segment forwards; the budget and hold-down change in place; the same
// settings again touch nothing.
func TestSupervisorReconfigure(t *testing.T) {
	r := newRig(t, bypassapi.Normal, fwOK, 0)
	r.steps(time.Second)
	if r.state() != bypassapi.Normal {
		t.Fatalf("start: %s, want normal (adopted)", r.state())
	}
	r.relay.take()
	moved := &config.Config{Segments: []config.Segment{{Name: "seg2", Ports: []string{"LAN1", "LAN2"}, Bypass: "pair1"}}}
	res, err := r.sup.Reconfigure(Settings{Config: moved, Budget: 600 * time.Millisecond, Policy: Policy{HoldDown: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Segments["pair1"]; c.From != "seg1" || c.To != "seg2" || !res.Budget || !res.Policy {
		t.Errorf("reconfigured %+v, want pair1 seg1 -> seg2, budget and policy changed", res)
	}
	if r.state() != bypassapi.Bypass || !slices.Contains(r.relay.take(), "set bypass") {
		t.Fatalf("a pair given another segment: %s, want bypass until that segment proves itself", r.state())
	}
	if d := r.sup.probeInterval(); d != 100*time.Millisecond {
		t.Errorf("probe interval %v, want 100ms from the 600ms budget", d)
	}
	r.steps(1900 * time.Millisecond)
	if r.state() != bypassapi.Bypass {
		t.Fatal("normal before the new 2s hold-down")
	}
	r.steps(300 * time.Millisecond)
	if r.state() != bypassapi.Normal {
		t.Fatalf("%s after the new hold-down, want normal", r.state())
	}
	if st := r.sup.Status(); st.Pairs[0].Segment != "seg2" || st.HoldDown != bypassapi.Duration(2*time.Second) {
		t.Errorf("status: pair follows %q, hold-down %v", st.Pairs[0].Segment, st.HoldDown)
	}
	r.relay.take()
	res, err = r.sup.Reconfigure(Settings{Config: moved, Budget: 600 * time.Millisecond, Policy: Policy{HoldDown: 2 * time.Second}})
	if err != nil || len(res.Segments) > 0 || res.Budget || res.Policy {
		t.Errorf("the same settings again: %+v, %v", res, err)
	}
	for _, op := range r.relay.take() {
		if op != "get" {
			t.Errorf("the same settings touched the relay: %s", op)
		}
	}
	// Without a segment the pair stays in bypass.
	if _, err := r.sup.Reconfigure(Settings{Config: &config.Config{}, Budget: 600 * time.Millisecond, Policy: Policy{HoldDown: 2 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	r.steps(5 * time.Second)
	if r.state() != bypassapi.Bypass {
		t.Errorf("a pair left without a segment: %s, want bypass", r.state())
	}
	if _, err := r.sup.Reconfigure(Settings{Config: moved, Budget: time.Millisecond}); err == nil {
		t.Error("a 1ms budget was taken")
	}
}

// TestReconfigureStartHoldDown: a new start hold-down takes effect in
// place for a pair still waiting for its first normal, and the status
// reports it; the pair keeps its segment and is not sent back to start.
func TestReconfigureStartHoldDown(t *testing.T) {
	r := newRig(t, bypassapi.Bypass, fwDead, 0) // power-on, forwarder loading
	r.steps(time.Second)
	same := &config.Config{Segments: []config.Segment{{Name: "seg1", Ports: []string{"LAN1", "LAN2"}, Bypass: "pair1"}}}
	res, err := r.sup.Reconfigure(Settings{Config: same, Budget: DefaultBudget, Policy: Policy{StartHoldDown: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Policy || len(res.Segments) > 0 || res.Budget {
		t.Errorf("reconfigured %+v, want the policy alone changed", res)
	}
	if st := r.sup.Status(); st.StartHoldDown != bypassapi.Duration(3*time.Second) || st.Pairs[0].HoldDown != bypassapi.Duration(3*time.Second) {
		t.Errorf("status: start hold-down %v, pair's in force %v; want 3s", st.StartHoldDown, st.Pairs[0].HoldDown)
	}
	r.prober.v = fwOK
	r.steps(2900 * time.Millisecond)
	if r.state() != bypassapi.Bypass {
		t.Fatal("normal before the new 3s start hold-down")
	}
	var named []string
	for _, c := range r.sup.Report().Conditions {
		if c.Kind == health.HoldDown && strings.Contains(c.Detail, "(start hold-down 3s)") {
			named = append(named, c.Detail)
		}
	}
	if len(named) != 1 {
		t.Errorf("hold_down conditions naming the start hold-down: %q, want one: %+v", named, r.sup.Report().Conditions)
	}
	r.steps(200 * time.Millisecond)
	if e := r.lastTransition(t); r.state() != bypassapi.Normal || !strings.Contains(e.Cause, "(start hold-down 3s)") {
		t.Errorf("%s after the new start hold-down, last transition %v", r.state(), e)
	}
}
