package health

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestEveryKindHasAClass(t *testing.T) {
	for _, k := range Kinds() {
		if _, ok := k.Class(); !ok {
			t.Errorf("%s has no class", k)
		}
	}
	if _, ok := Kind("made_up").Class(); ok {
		t.Error("an unknown kind has a class")
	}
	// The watchdog acts on liveness kinds only: none of the network's
	// conditions may be one.
	for _, k := range []Kind{LinkDown, PortAbsent, TxStalled, RelayBypass, RelayNotDrivable, PermDegraded, ConfigRejected} {
		if c, _ := k.Class(); c == ClassLiveness {
			t.Errorf("%s is a liveness kind", k)
		}
	}
}

func TestTrackerKeepsSince(t *testing.T) {
	var tr Tracker
	tr.Source = "forwarderd"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	down := Condition{Kind: LinkDown, Segment: "seg1", Port: "LAN2", Detail: "link down"}
	got := tr.Update(t0, []Condition{down})
	if len(got) != 1 || !got[0].Since.Equal(t0) || got[0].Source != "forwarderd" {
		t.Fatalf("first look: %+v", got)
	}
	// The same condition with other words is the same condition.
	down.Detail = "carrier lost"
	got = tr.Update(t0.Add(time.Minute), []Condition{down, down})
	if len(got) != 1 || !got[0].Since.Equal(t0) {
		t.Fatalf("second look: %+v, want since %v", got, t0)
	}
	// Gone, then back: it starts anew.
	tr.Update(t0.Add(2*time.Minute), nil)
	got = tr.Update(t0.Add(3*time.Minute), []Condition{down})
	if !got[0].Since.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("after clearing: since %v", got[0].Since)
	}
}

// TestTrackerTellsChanges: each condition is told once when it begins and
// once when it ends, however often the same set is looked at.
func TestTrackerTellsChanges(t *testing.T) {
	var told []string
	tr := Tracker{Source: "forwarderd", Changed: func(c Condition, raised bool) {
		told = append(told, fmt.Sprintf("%v %s %s", raised, c.Kind, c.Port))
	}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	down := Condition{Kind: LinkDown, Segment: "seg1", Port: "LAN2"}
	stalled := Condition{Kind: TxStalled, Segment: "seg1", Port: "LAN1"}
	for i, look := range [][]Condition{{down}, {down}, {down, stalled}, {stalled}, {stalled}, nil, nil} {
		tr.Update(t0.Add(time.Duration(i)*time.Second), look)
	}
	want := []string{"true link_down LAN2", "true tx_stalled LAN1", "false link_down LAN2", "false tx_stalled LAN1"}
	if !slices.Equal(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}

func TestOnlyAndHas(t *testing.T) {
	cs := []Condition{{Kind: LinkDown}, {Kind: PortAbsent}}
	if !Only(cs, LinkDown, PortAbsent) || Only(cs, LinkDown) || !Only(nil, LinkDown) {
		t.Error("Only")
	}
	if !Has(cs, PortAbsent) || Has(cs, TxStalled) {
		t.Error("Has")
	}
	l := Live(time.Time{}, Problem{Kind: HeartbeatStale, Detail: "last 5s ago"})
	if l.Live || l.String() != "heartbeat_stale: last 5s ago" {
		t.Errorf("liveness %+v %q", l, l)
	}
}
