package forwarder

import (
	"testing"
	"time"
)

// TestRemap carries samples over a change of segments: a kept port keeps
// its counters and losses at its new position, a new port takes its
// baseline reading, so that no delta spans the change.
func TestRemap(t *testing.T) {
	at := time.Unix(1000, 0)
	s := sample{at: at,
		ports: []portCounters{{RxPackets: 10}, {RxPackets: 20}, {RxPackets: 30}, {RxPackets: 40}},
		links: []linkStats{{txPackets: 1}, {txPackets: 2}, {txPackets: 3}, {txPackets: 4}},
		lost:  []int64{5, 6, 7, 8},
	}
	base := sample{at: at.Add(time.Second),
		ports: []portCounters{{RxPackets: 99}, {RxPackets: 98}, {RxPackets: 97}, {RxPackets: 96}},
		links: []linkStats{{txPackets: 90}, {txPackets: 91}, {txPackets: 92}, {txPackets: 93}},
	}
	// The second segment (positions 2, 3) moves to the front; a new
	// one takes positions 2 and 3.
	got := remap(s, []int{2, 3, -1, -1}, base)
	if got.at != at {
		t.Errorf("time %v, want the sample's %v", got.at, at)
	}
	wantRx := []uint64{30, 40, 97, 96}
	wantTx := []uint64{3, 4, 92, 93}
	wantLost := []int64{7, 8, 0, 0}
	for i := range wantRx {
		if got.ports[i].RxPackets != wantRx[i] || got.links[i].txPackets != wantTx[i] || got.lost[i] != wantLost[i] {
			t.Errorf("port %d: rx %d tx %d lost %d, want %d %d %d", i, got.ports[i].RxPackets, got.links[i].txPackets, got.lost[i], wantRx[i], wantTx[i], wantLost[i])
		}
	}
	// A sample taken before any loss was accounted keeps none.
	s.lost = nil
	if got := remap(s, []int{0, 1}, base); got.lost != nil {
		t.Errorf("losses %v from a sample without any", got.lost)
	}
}
