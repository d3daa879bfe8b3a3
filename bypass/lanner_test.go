package bypass

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/lanner"
)

// mb887x is the bus of an MB-8865 (board "mb-887x"): a PCA9545 at 0x73
// with one Lanner module per occupied bay, each answering at 0x30 behind
// its channel.
func mb887x(modules map[int]*lannerMCU) *emuSMBus {
	bus := newEmuSMBus()
	sw := newPCA954x(4)
	for slot, m := range modules {
		sw.behind[slot-1][0x30] = m
	}
	bus.devices[0x73] = sw
	return bus
}

func lannerCfg(board string, slot, pair int) config.Lanner {
	return config.Lanner{Board: board, Slot: slot, Pair: pair}
}

func TestLannerBackend(t *testing.T) {
	m1, m2 := newLannerMCU(), newLannerMCU()
	bus := mb887x(map[int]*lannerMCU{1: m1, 2: m2})
	b1, err := newLanner(bus, "i2c-0", lannerCfg("mb-887x", 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	b2, err := newLanner(bus, "i2c-0", lannerCfg("mb-887x", 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	c := b1.Caps()
	if !slices.Equal(c.States, []bypassapi.State{bypassapi.Normal, bypassapi.Bypass}) || c.Can(bypassapi.Disconnect) || !c.CanDefault(bypassapi.PowerOff, bypassapi.Normal) ||
		!c.CanDefault(bypassapi.PowerUp, bypassapi.Bypass) || !c.CanDefault(bypassapi.TimerExpiry, bypassapi.Bypass) || c.CanDefault(bypassapi.TimerExpiry, bypassapi.Normal) ||
		c.Timer == nil || c.Timer.Max != 255*time.Second || c.Timer.Unit != time.Second || !c.ReadBack || c.ReadBackOf != bypassapi.ReadsController || !c.LinkDownInBypass {
		t.Fatalf("caps %s", c)
	}
	if !strings.Contains(strings.Join(c.Notes, "; "), "firmware 1.6, at i2c-0 switch 0x73:0x01 module 0x30, pair 1") {
		t.Errorf("notes %q", c.Notes)
	}

	// Every transaction selects the bay first; each backend moves only
	// its own module's bit.
	bus.take()
	if err := b1.Set(bypassapi.Normal); err != nil {
		t.Fatal(err)
	}
	log := bus.take()
	if log[0] != "send 0x73 0x01" || !slices.Contains(log, "write 0x30 0x12=0x02") {
		t.Errorf("set normal on bay 1: %q", log)
	}
	if m1.inBypass(1) || !m1.inBypass(2) || !m2.inBypass(1) || !m2.inBypass(2) {
		t.Errorf("after pair 1 of bay 1 to normal: bay 1 %02b, bay 2 %02b", m1.relay, m2.relay)
	}
	if err := b2.Set(bypassapi.Normal); err != nil {
		t.Fatal(err)
	}
	if st, _ := b1.Get(); st != bypassapi.Normal || m2.relay != 0x01 {
		t.Errorf("bay 1 pair 1 reads %s, bay 2 contacts %02b", st, m2.relay)
	}
	if err := b2.Set(bypassapi.Bypass); err != nil {
		t.Fatal(err)
	}
	if st, _ := b2.Get(); st != bypassapi.Bypass || m2.relay != 0x03 || m1.relay != 0x02 {
		t.Errorf("bay 2 pair 2 reads %s, contacts %02b / %02b", st, m1.relay, m2.relay)
	}

	// Defaults: written and saved once when they change, not again.
	for _, d := range []struct {
		e bypassapi.Event
		s bypassapi.State
	}{{bypassapi.PowerOff, bypassapi.Bypass}, {bypassapi.PowerUp, bypassapi.Bypass}, {bypassapi.TimerExpiry, bypassapi.Bypass}} {
		if err := b1.SetDefault(d.e, d.s); err != nil {
			t.Fatal(err)
		}
		if got, err := b1.Default(d.e); err != nil || got != d.s {
			t.Errorf("%s default reads %s, %v", d.e, got, err)
		}
	}
	// Opening gave the Just-On watchdog a time (one save); power-off was
	// connect (factory): a save; the Just-On mask already had the bit;
	// the watchdog mask is new: a third save.
	if m1.saves != 3 || b1.saves != 3 || m1.nv[0x42] != 255 {
		t.Errorf("%d saves (backend %d), want 3; saved WDT3 time %d", m1.saves, b1.saves, m1.nv[0x42])
	}
	for _, e := range []bypassapi.Event{bypassapi.PowerOff, bypassapi.PowerUp, bypassapi.TimerExpiry} {
		if err := b1.SetDefault(e, bypassapi.Bypass); err != nil {
			t.Fatal(err)
		}
	}
	if m1.saves != 3 {
		t.Errorf("%d saves after setting the same defaults again, want still 3", m1.saves)
	}
	if err := b1.SetDefault(bypassapi.TimerExpiry, bypassapi.Normal); !errors.Is(err, errUnsupported) {
		t.Errorf("timer expiry normal: %v", err)
	}
	if err := b1.Set(bypassapi.Disconnect); !errors.Is(err, errUnsupported) {
		t.Errorf("disconnect: %v", err)
	}

	// The watchdog: rounded up to whole seconds, capped at the module's
	// longest; the Just-On watchdog is stopped once it is armed.
	m1.status[0x40], m1.left[0x40] = 1, 60
	if d, err := b1.Arm(2500 * time.Millisecond); err != nil || d != 3*time.Second {
		t.Fatalf("arm 2.5s: %v, %v", d, err)
	}
	if m1.status[0x40] != 0 || m1.reg[0x22] != 3 || m1.status[0x20] != 1 {
		t.Errorf("after arming: WDT3 status %d, WDT1 time %d status %d", m1.status[0x40], m1.reg[0x22], m1.status[0x20])
	}
	for range 5 {
		m1.advance(2 * time.Second)
		if err := b1.Kick(); err != nil {
			t.Fatal(err)
		}
	}
	if left, err := b1.TimeLeft(); err != nil || left != 3*time.Second || m1.inBypass(1) {
		t.Errorf("kicked every 2s: %v left (%v), contacts %02b", left, err, m1.relay)
	}
	// Not kicked: the module bypasses pair 1 by itself.
	m1.advance(3 * time.Second)
	if !m1.inBypass(1) {
		t.Fatalf("contacts %02b after the watchdog ran out", m1.relay)
	}
	if st, _ := b1.Get(); st != bypassapi.Bypass {
		t.Errorf("reads %s after the watchdog expired", st)
	}
	if exp, err := b1.TimerExpired(); !exp || err != nil {
		t.Errorf("expired %v, %v", exp, err)
	}
	if err := b1.Kick(); !errors.Is(err, errTimerExpired) {
		t.Errorf("kick after expiry: %v", err)
	}
	if err := b1.Set(bypassapi.Normal); err != nil {
		t.Fatal(err)
	}
	if st, _ := b1.Get(); st != bypassapi.Normal || m1.inBypass(1) {
		t.Errorf("set normal after the expiry: reads %s, contacts %02b", st, m1.relay)
	}
	if d, _ := b1.Arm(time.Hour); d != 255*time.Second || m1.reg[0x22] != 255 {
		t.Errorf("arm 1h: %v, register %d", d, m1.reg[0x22])
	}
	if err := b1.Disarm(); err != nil || m1.status[0x20] != 0 {
		t.Errorf("disarm: %v, status %d", err, m1.status[0x20])
	}

	// Power: off latches the saved System-Off mask; on loads the saved
	// settings and the Just-On mask.
	m1.powerOff()
	if !m1.inBypass(1) {
		t.Errorf("powered off: contacts %02b", m1.relay)
	}
	if _, err := b1.Get(); err == nil {
		t.Error("a powered-off module answered")
	}
	m1.powerOn()
	if !m1.inBypass(1) || m1.reg[0x10] != 0x01 {
		t.Errorf("powered on: contacts %02b, System-Off mask %02b", m1.relay, m1.reg[0x10])
	}
	for _, m := range []*lannerMCU{m1, m2} {
		if len(m.violations) > 0 {
			t.Errorf("protocol violations: %q", m.violations)
		}
	}
}

func TestLannerErrors(t *testing.T) {
	bus := mb887x(map[int]*lannerMCU{1: newLannerMCU()})
	// An empty bay: nothing acknowledges behind the switch.
	if _, err := newLanner(bus, "i2c-0", lannerCfg("mb-887x", 3, 1)); err == nil ||
		!strings.Contains(err.Error(), "identifying the module (i2c-0 switch 0x73:0x04 module 0x30, board mb-887x slot 3)") {
		t.Errorf("empty bay: %v", err)
	}
	// A pair the module does not have.
	if _, err := newLanner(bus, "i2c-0", lannerCfg("mb-887x", 1, 3)); err == nil ||
		!strings.Contains(err.Error(), "run-time bypass on pairs 00000011, not on pair 3") {
		t.Errorf("pair 3: %v", err)
	}
	// No switch on the bus (the board is not what the profile says).
	if _, err := newLanner(newEmuSMBus(), "i2c-0", lannerCfg("mb-887x", 1, 1)); err == nil ||
		!strings.Contains(err.Error(), "selecting channel 0x01 of the I2C switch at 0x73") {
		t.Errorf("no switch: %v", err)
	}
	// Something else at the module's address: it does not echo.
	other := newEmuSMBus()
	other.devices[0x37] = newPCA954x(2)
	if _, err := newLanner(other, "i2c-0", lannerCfg("onboard", 0, 1)); err == nil {
		t.Error("a switch taken for a module")
	}
	// A module pulled from its bay after bypassd opened it.
	pulled := mb887x(map[int]*lannerMCU{1: newLannerMCU(), 2: newLannerMCU()})
	b, err := newLanner(pulled, "i2c-0", lannerCfg("mb-887x", 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	delete(pulled.devices[0x73].(*pca954x).behind[0], 0x30)
	if _, err := b.Get(); err == nil {
		t.Error("a module pulled from its bay still reads")
	}

	// On-board: 0x37, no switch.
	ob := newEmuSMBus()
	mcu := newLannerMCU()
	ob.devices[0x37] = mcu
	b, err = newLanner(ob, "i2c-5", lannerCfg("onboard", 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Set(bypassapi.Normal); err != nil || mcu.relay != 0x01 {
		t.Errorf("on-board set normal: %v, contacts %02b", err, mcu.relay)
	}
	for _, l := range ob.take() {
		if strings.HasPrefix(l, "send") {
			t.Errorf("on-board module: %s", l)
		}
	}
}

func TestFindAdapter(t *testing.T) {
	sys := t.TempDir()
	add := func(n, name string) {
		dir := filepath.Join(sys, "bus", "i2c", "devices", n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if name != "" {
			if err := os.WriteFile(filepath.Join(dir, "name"), []byte(name+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := findAdapter(sys, "SMBus I801 adapter"); err == nil || !strings.Contains(err.Error(), "listing I2C adapters") {
		t.Errorf("no i2c bus directory: %v", err)
	}
	add("i2c-0", "i915 gmbus dpc")
	add("i2c-1", "")
	add("0-0050", "")
	if _, err := findAdapter(sys, "SMBus I801 adapter"); err == nil ||
		!strings.Contains(err.Error(), `no I2C adapter named "SMBus I801 adapter" (there are i2c-0 "i915 gmbus dpc")`) {
		t.Errorf("no i801: %v", err)
	}
	add("i2c-7", "SMBus I801 adapter at f000")
	if bus, err := findAdapter(sys, "SMBus I801 adapter"); err != nil || bus != 7 {
		t.Errorf("i801: %d, %v", bus, err)
	}
	add("i2c-9", "SMBus I801 adapter at e000")
	if _, err := findAdapter(sys, "SMBus I801 adapter"); err == nil || !strings.Contains(err.Error(), "[7 9]") {
		t.Errorf("two i801: %v", err)
	}
}

// TestLannerThroughBypassd runs bypassd's supervisor on the compiled-in
// FW-8865 profile against two emulated modules in bays 1 and 2, through a
// box's life: boot in bypass, normal once the forwarder is live, bypass
// when forwarderd is killed, bypass by the module's own watchdog when
// bypassd itself is killed, no non-volatile write on a restart, and the
// saved power-off default when the power goes.
func TestLannerThroughBypassd(t *testing.T) {
	m1, m2 := newLannerMCU(), newLannerMCU()
	bus := mb887x(map[int]*lannerMCU{1: m1, 2: m2})
	l := &boxLife{t: t, c: newClock(), cfg: twoSegments(t, "fw-8865"), pairs: 2,
		open: func(bp config.BypassPair, _ [2]string) (Backend, error) {
			if bp.Backend != "lanner" || bp.RegisterMap != "vendor" {
				t.Fatalf("profile pair %s: backend %s, map %s", bp.Name, bp.Backend, bp.RegisterMap)
			}
			return newLanner(bus, "i2c-0", bp.Lanner)
		},
		tick: func(d time.Duration) { m1.advance(d); m2.advance(d) }}
	contacts := func(want string, what string) {
		t.Helper()
		got := "normal"
		if m1.inBypass(1) {
			got = "bypass"
		}
		if m2.inBypass(1) != m1.inBypass(1) {
			got = "bay 1 " + got + ", bay 2 differs"
		}
		if got != want {
			t.Fatalf("%s: relays %s (contacts %02b, %02b), want %s", what, got, m1.relay, m2.relay, want)
		}
	}

	contacts("bypass", "powered on")
	l.start()
	l.run(10*time.Second, true)
	contacts("bypass", "booted, forwarder not live")
	// The defaults went to non-volatile memory: power-off (factory:
	// connected) and the watchdog's pair; power-up was already bypass;
	// and the Just-On watchdog got a time.
	if m1.nv[0x10]&1 == 0 || m1.nv[0x21]&1 == 0 || m1.saves != 3 || m2.saves != 3 {
		t.Errorf("saved System-Off %02b, WDT1 pairs %02b, saves %d/%d", m1.nv[0x10], m1.nv[0x21], m1.saves, m2.saves)
	}
	if m1.status[0x20] != 1 || m1.reg[0x22] != 5 {
		t.Errorf("watchdog 1: status %d, time %d", m1.status[0x20], m1.reg[0x22])
	}

	l.forwarder(true)
	l.run(6*time.Second, true)
	contacts("normal", "forwarder live past the hold-down")

	l.forwarder(false)
	l.run(400*time.Millisecond, true)
	contacts("bypass", "forwarderd killed, within the budget")

	l.forwarder(true)
	l.run(15*time.Second, true)
	contacts("normal", "forwarderd back")

	// bypassd is killed: nobody kicks; the module's watchdog (5s) takes
	// the pairs to bypass by itself. bypassd kicks at a third of the
	// timeout: the last kick was at most 1.7s before it died.
	l.run(3*time.Second, false)
	contacts("normal", "bypassd dead for 3s of a 5s watchdog")
	l.run(3*time.Second, false)
	contacts("bypass", "bypassd dead past the module's watchdog")

	// bypassd restarts: it sees the expiry, re-arms and goes back to
	// normal, writing nothing to non-volatile memory.
	saves := m1.saves + m2.saves
	l.start()
	l.run(15*time.Second, true)
	contacts("normal", "bypassd restarted")
	if m1.saves+m2.saves != saves {
		t.Errorf("a restart saved the settings again: %d saves, had %d", m1.saves+m2.saves, saves)
	}
	if m1.status[0x20] != 1 {
		t.Errorf("watchdog 1 status %d after the restart, want running", m1.status[0x20])
	}

	// Power cut: the saved System-Off default holds the relays in
	// bypass; power back: Just-On bypass until bypassd runs again.
	m1.powerOff()
	m2.powerOff()
	contacts("bypass", "power off")
	m1.powerOn()
	m2.powerOn()
	contacts("bypass", "power back, before bypassd")

	// The run-time mask was saved with the relays normal (as when a
	// default changes while the box forwards): after the power cut the
	// module is in its Just-On phase, in bypass, while 0x12 says normal.
	// bypassd must take over from the Just-On phase, not believe 0x12.
	for _, m := range []*lannerMCU{m1, m2} {
		m.nv[0x12] = 0
		m.powerOff()
		m.powerOn()
	}
	contacts("bypass", "power back with a saved run-time mask of normal")
	if m1.status[0x40] != 1 {
		t.Fatalf("Just-On watchdog status %d at power-on, want running", m1.status[0x40])
	}
	l.forwarder(true)
	l.start()
	if st := l.sup.pairs[0].applied; st != bypassapi.Bypass {
		t.Errorf("bypassd starts believing %s in the Just-On phase", st)
	}
	l.run(800*time.Millisecond, true)
	contacts("bypass", "Just-On, within the start hold-down")
	l.run(400*time.Millisecond, true)
	contacts("normal", "taken over from Just-On, forwarder live for the start hold-down")
	if n := l.sup.pairs[0].transitions[bypassapi.Normal]; n != 1 {
		t.Errorf("%d transitions to normal after the takeover, want 1", n)
	}
	for _, m := range []*lannerMCU{m1, m2} {
		if len(m.violations) > 0 {
			t.Errorf("protocol violations: %q", m.violations)
		}
	}
}

// TestLannerBoardsDocumented wants every board the backend knows in the
// table of PROFILES.md, and nothing else there.
func TestLannerBoardsDocumented(t *testing.T) {
	doc, err := os.ReadFile("PROFILES.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			if i := strings.Index(name, "`"); i > 0 {
				listed = append(listed, name[:i])
			}
		}
	}
	slices.Sort(listed)
	if want := lanner.Boards(); !slices.Equal(listed, want) {
		t.Errorf("PROFILES.md lists boards %q, the backend knows %q", listed, want)
	}
}
