package vm

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"
)

// slotLedger records how long each test held its guest slots. TestMain
// prints it after the run: guest time, not a test's length (which
// includes its wait for a slot), is what the order of guestOrder and the
// length of a CI run follow.
type slotLedger struct {
	mu    sync.Mutex
	start time.Time
	since map[*testing.T]time.Time
	held  map[string]time.Duration // slot-time per test
}

var ledger = &slotLedger{start: time.Now(), since: map[*testing.T]time.Time{}, held: map[string]time.Duration{}}

// took notes that t holds its slots from now on.
func (l *slotLedger) took(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.since[t]; !ok {
		l.since[t] = time.Now()
	}
}

// gave notes that t gave its n slots back; a second call is a no-op.
func (l *slotLedger) gave(t *testing.T, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	since, ok := l.since[t]
	if !ok {
		return
	}
	delete(l.since, t)
	l.held[t.Name()] += time.Duration(n) * time.Since(since)
}

// print writes the tests that held slots, most slot-time first, and
// their sum against the slots the run had.
func (l *slotLedger) print(w io.Writer, slots int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.held) == 0 {
		return
	}
	names := make([]string, 0, len(l.held))
	var sum time.Duration
	for n, d := range l.held {
		names = append(names, n)
		sum += d
	}
	slices.SortFunc(names, func(a, b string) int { return int(l.held[b] - l.held[a]) })
	run := time.Since(l.start)
	fmt.Fprintf(w, "guest slot-time by test: %v in all, %v of run on %d slot(s) (%.0f%% used)\n",
		sum.Round(time.Second), run.Round(time.Second), slots, 100*sum.Seconds()/(run.Seconds()*float64(slots)))
	for _, n := range names {
		fmt.Fprintf(w, "  %-48s %8v\n", n, l.held[n].Round(time.Second))
	}
}

func TestSlotLedger(t *testing.T) {
	l := &slotLedger{start: time.Now(), since: map[*testing.T]time.Time{}, held: map[string]time.Duration{}}
	t.Run("a", func(a *testing.T) {
		l.took(a)
		l.since[a] = l.since[a].Add(-3 * time.Second)
		l.gave(a, 2)
		l.gave(a, 2) // the cleanup after idleGuests
	})
	if d := l.held["TestSlotLedger/a"]; d < 6*time.Second || d > 7*time.Second {
		t.Errorf("two slots held 3 s count %v, want 6 s", d)
	}
}
