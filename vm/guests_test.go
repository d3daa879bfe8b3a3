package vm

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Guests in software emulation starve each other when there are more of
// them than cores: each test holds a slot per guest it runs, one slot per
// core on the host, and waits for its slots before it builds its image
// and boots. A test holds its slots until it ends (a test that boots its
// disk again after a reboot or an install still runs one guest at a
// time); a test that runs two at once asks for two first.
//
// The slots go to the waiting tests by rank, then in the order they
// asked, and the first ones only once every test that started at the
// same moment has had time to ask: the tests that hold their guests
// longest boot first, so that none of them is left to run alone at the
// end of the run while the other slot has nothing to do.
type guestPool struct {
	mu      sync.Mutex
	free    int64
	held    map[any]int64
	waiting []*guestWaiter
	seq     int
	gather  time.Duration
	asked   bool // a test has asked: the pool opens after gather
	opened  bool
}

type guestWaiter struct {
	key       any
	n, need   int64
	rank, seq int
	granted   chan struct{}
}

func newGuestPool(slots int, gather time.Duration) *guestPool {
	return &guestPool{free: int64(slots), held: map[any]int64{}, gather: gather}
}

// take waits until key holds n slots. Lower ranks go first.
func (p *guestPool) take(key any, n int64, rank int) {
	p.mu.Lock()
	have := p.held[key]
	if have >= n {
		p.mu.Unlock()
		return
	}
	p.seq++
	w := &guestWaiter{key: key, n: n, need: n - have, rank: rank, seq: p.seq, granted: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	slices.SortStableFunc(p.waiting, func(a, b *guestWaiter) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return a.seq - b.seq
	})
	if !p.asked {
		p.asked = true
		time.AfterFunc(p.gather, func() {
			p.mu.Lock()
			p.opened = true
			p.grantLocked()
			p.mu.Unlock()
		})
	}
	p.grantLocked()
	p.mu.Unlock()
	<-w.granted
}

// grantLocked hands free slots to the waiters in order. The first in
// line is served first even when it needs more than is free: a test
// that needs two slots is not overtaken for ever by tests needing one.
func (p *guestPool) grantLocked() {
	if !p.opened {
		return
	}
	for len(p.waiting) > 0 && p.waiting[0].need <= p.free {
		w := p.waiting[0]
		p.waiting = p.waiting[1:]
		p.free -= w.need
		p.held[w.key] = w.n
		close(w.granted)
	}
}

// give returns key's slots.
func (p *guestPool) give(key any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free += p.held[key]
	delete(p.held, key)
	p.grantLocked()
}

// guests are the host's: one slot per core. The tests that run in
// parallel all start within a few milliseconds of each other.
var (
	guestSlots = max(runtime.NumCPU(), 1)
	guests     = newGuestPool(guestSlots, 2*time.Second)
)

// guestOrder ranks the boot tests by how long they hold their guests in
// a CI run, longest first; tests not named go after them. The fleet test
// goes first because it gives its two slots back for its long window.
// A wrong order costs time, never a result.
var guestOrder = []string{
	"TestFleet",
	"TestBootLegacyBIOS", // its guest sits idle after 30 s
	"TestClockFromNTP",   // idle for ten minutes after one
	"TestUpdateKernelPanicRollsBack",
	"TestUpdateKilledInKernelWrite",
	"TestUpdateAToB/uefi",
	"TestUpdateAToB/bios",
	"TestUpdateFallsBack",
	"TestStatusdEndToEnd",
	"TestInstallToInternalDisk",
	"TestUpdateRefused",
	"TestOverrideSurvivesRestartAndReboot",
	"TestWireOnIntelPorts",
	"TestWireOnIgbPorts",
	"TestXDPModeSwitch",
	"TestBootToForwarding",
	"TestConfigInPlace",
	"TestConfigRevert",
	"TestConfigReboot",
	"TestConfigPowerCut",
	"TestCablePullNoReset",
	"TestSelfTestThroughCables",
	"TestWatchdogResetsFrozenStatusd",
	"TestWatchdogPlannedReboot",
	"TestWatchdogResetsHungAppliance",
	"TestNoWatchdogdNoReset",
	"TestPermUnmountableNoReset",
	"TestWatchdogHealthyNotReset",
	"TestAbsentPortsNoReset",
	"TestBootUEFI",
	"TestInstalledLoopDeviceBoots",
}

func guestRank(name string) int {
	if i := slices.Index(guestOrder, name); i >= 0 {
		return i
	}
	top, _, _ := strings.Cut(name, "/")
	if i := slices.Index(guestOrder, top); i >= 0 {
		return i
	}
	return len(guestOrder)
}

// needGuests waits until t holds n guest slots; they go back when t ends.
func needGuests(t *testing.T, n int64) {
	t.Helper()
	asked := time.Now()
	guests.mu.Lock()
	have := guests.held[t]
	guests.mu.Unlock()
	if have >= n {
		return
	}
	guests.take(t, n, guestRank(t.Name()))
	ledger.took(t)
	t.Logf("%d guest slot(s) after waiting %v", n, time.Since(asked).Round(time.Second))
	t.Cleanup(func() { idleGuests(t) })
}

// idleGuests gives t's slots back for the rest of the test, whose guests
// sit idle from then on (boxes left to themselves but for a cable change
// now and then, or an idle box whose disk writes are counted): other
// tests' guests run meanwhile.
func idleGuests(t *testing.T) {
	guests.mu.Lock()
	n := guests.held[t]
	guests.mu.Unlock()
	guests.give(t)
	ledger.gave(t, n)
}

func TestGuestPool(t *testing.T) {
	order := make(chan string, 8)
	ask := func(p *guestPool, key string, n int64, rank int) {
		go func() { p.take(key, n, rank); order <- key }()
		time.Sleep(10 * time.Millisecond)
	}
	want := func(key string) {
		t.Helper()
		select {
		case got := <-order:
			if got != key {
				t.Fatalf("%s was served, want %s", got, key)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nobody was served, want %s", key)
		}
	}
	none := func(why string) {
		t.Helper()
		select {
		case got := <-order:
			t.Fatalf("%s was served %s", got, why)
		case <-time.After(100 * time.Millisecond):
		}
	}
	// Asked before the pool opens: served by rank, whatever the order
	// they asked in.
	p := newGuestPool(1, 100*time.Millisecond)
	ask(p, "short", 1, 5)
	ask(p, "long", 1, 1)
	ask(p, "first", 1, 0)
	want("first")
	none("while first held the only slot")
	p.give("first")
	want("long")
	p.give("long")
	want("short")

	// A waiter needing two is not overtaken by one needing one.
	p = newGuestPool(2, 10*time.Millisecond)
	ask(p, "a", 1, 0)
	want("a")
	ask(p, "pair", 2, 0)
	ask(p, "one", 1, 9)
	none("with one slot free and the pair first in line")
	p.give("a")
	want("pair")
	none("while the pair held both slots")
	p.give("pair")
	want("one")
}
