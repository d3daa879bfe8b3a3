package bench

import (
	"testing"
	"time"
)

// TestWaitSent: the counter is read until it has moved as far as wanted,
// and read once more at the deadline when it never does; with no time
// to wait it is read once.
func TestWaitSent(t *testing.T) {
	reads := 0
	late := func() (uint64, error) { reads++; return 100 + uint64(min(reads, 3))*4, nil } // 104, 108, 112, 112, ...
	if got, err := waitSent(late, 100, 12, time.Second, time.Millisecond); err != nil || got != 12 || reads != 3 {
		t.Errorf("a counter that moves late: moved %d after %d reads (%v), want 12 after 3", got, reads, err)
	}
	reads = 0
	start := time.Now()
	if got, _ := waitSent(late, 100, 16, 30*time.Millisecond, time.Millisecond); got != 12 || time.Since(start) < 30*time.Millisecond {
		t.Errorf("a counter that stops short: moved %d, gave up after %v; want 12 after 30ms", got, time.Since(start))
	}
	reads = 0
	if got, _ := waitSent(late, 100, 16, 0, time.Millisecond); got != 4 || reads != 1 {
		t.Errorf("no time to wait: moved %d after %d reads, want 4 after 1", got, reads)
	}
}
