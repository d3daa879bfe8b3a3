package vm

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sync/semaphore"
)

// Guests in software emulation starve each other when there are more of
// them than cores: each test holds a slot per guest it runs, one slot per
// core on the host, and waits for its slots before it boots. A test holds
// its slots until it ends (a test that boots its disk again after a
// reboot or an install still runs one guest at a time); a test that runs
// two at once asks for two first.
type guestPool struct {
	sem  *semaphore.Weighted
	mu   sync.Mutex
	held map[any]int64
}

func newGuestPool(slots int) *guestPool {
	return &guestPool{sem: semaphore.NewWeighted(int64(slots)), held: map[any]int64{}}
}

// take waits until key holds n slots.
func (p *guestPool) take(ctx context.Context, key any, n int64) error {
	p.mu.Lock()
	have := p.held[key]
	p.mu.Unlock()
	if have >= n {
		return nil
	}
	if err := p.sem.Acquire(ctx, n-have); err != nil {
		return err
	}
	p.mu.Lock()
	p.held[key] = n
	p.mu.Unlock()
	return nil
}

// tryTake is take without waiting: false when the slots are not free.
func (p *guestPool) tryTake(key any, n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	have := p.held[key]
	if have >= n {
		return true
	}
	if !p.sem.TryAcquire(n - have) {
		return false
	}
	p.held[key] = n
	return true
}

// give returns key's slots.
func (p *guestPool) give(key any) {
	p.mu.Lock()
	n := p.held[key]
	delete(p.held, key)
	p.mu.Unlock()
	if n > 0 {
		p.sem.Release(n)
	}
}

// guests are the host's: one slot per core.
var guests = newGuestPool(max(runtime.NumCPU(), 1))

// needGuests waits until t holds n guest slots; they go back when t ends.
func needGuests(t *testing.T, n int64) {
	t.Helper()
	if err := guests.take(context.Background(), t, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { guests.give(t) })
}

// idleGuests gives t's slots back for the rest of the test, whose guests
// sit idle from then on (boxes left to themselves but for a cable change
// now and then, whose writes a test counts): other tests' guests run
// meanwhile.
func idleGuests(t *testing.T) { guests.give(t) }

func TestGuestPool(t *testing.T) {
	p := newGuestPool(2)
	for _, step := range []struct {
		what string
		ok   bool
	}{
		{"a takes both", p.tryTake("a", 2)},
		{"b finds none", !p.tryTake("b", 1)},
		{"a asking again holds what it has", p.tryTake("a", 1)},
	} {
		if !step.ok {
			t.Fatal(step.what)
		}
	}
	p.give("a")
	if !p.tryTake("b", 1) || !p.tryTake("b", 2) || p.tryTake("c", 1) {
		t.Fatal("b could not take one slot and then a second, or c found one")
	}
	done := make(chan error)
	go func() { done <- p.take(context.Background(), "c", 1) }()
	p.give("b")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p.tryTake("d", 2) {
		t.Fatal("d took two slots while c held one")
	}
}
