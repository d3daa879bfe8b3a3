package bypass

import (
	"fmt"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/lanner"
)

// Every command and value below is one of package lanner's, each traced
// there to Lanner's bpwd 1.2.9 (include/bp_def.h, src/smbustst.c).

// lannerModule is the microcontroller of one Lanner Gen 3 module, reached
// through its board's switches. Every transaction selects the switch
// channels again first: another slot's pair may have moved them.
type lannerModule struct {
	bus   smbusBus
	hops  []lanner.Hop
	addr  byte
	where string
}

func (m *lannerModule) route() error {
	for _, h := range m.hops {
		if err := m.bus.SendByte(h.Switch, h.Channel); err != nil {
			return fmt.Errorf("selecting channel %#02x of the I2C switch at %#02x: %w", h.Channel, h.Switch, err)
		}
	}
	return nil
}

func (m *lannerModule) read(cmd byte) (byte, error) {
	if err := m.route(); err != nil {
		return 0, err
	}
	w, err := m.bus.ReadWordData(m.addr, cmd)
	if err != nil {
		return 0, err
	}
	return lanner.Word(cmd, w)
}

func (m *lannerModule) write(cmd, v byte) error {
	if err := m.route(); err != nil {
		return err
	}
	return m.bus.WriteByteData(m.addr, cmd, v)
}

// lannerBackend drives one pair (one bit of the masks) of a module. The
// run-time mask (0x12) sets the relay; the System-Off (0x10) and Just-On
// (0x11) masks are the power-off and power-up defaults, kept in the
// module's non-volatile memory by SaveSettings; watchdog 1 is the
// controller timer, its pair mask (0x21) the timer-expiry default.
type lannerBackend struct {
	m    *lannerModule
	bit  byte
	caps bypassapi.Caps
	// Saves counts the SaveSettings commands sent: the module's
	// non-volatile memory is written only when a default changes.
	saves int
}

// openLanner opens the SMBus adapter of a profile's lanner pair: the bus
// it names, or the one whose sysfs name is the configured adapter's.
func openLanner(cfg config.Lanner, sys string) (*lannerBackend, error) {
	cfg = cfg.WithDefaults()
	bus := 0
	if cfg.Bus != nil {
		bus = *cfg.Bus
	} else {
		var err error
		if bus, err = findAdapter(sys, cfg.Adapter); err != nil {
			return nil, fmt.Errorf("lanner: finding the SMBus: %w", err)
		}
	}
	a, err := openAdapter(bus, false)
	if err != nil {
		return nil, fmt.Errorf("lanner: %w", err)
	}
	b, err := newLanner(a, fmt.Sprintf("i2c-%d", bus), cfg)
	if err != nil {
		a.Close()
	}
	return b, err
}

// newLanner identifies the module of cfg on bus and works out what the
// pair can do from the module's own capability registers.
func newLanner(bus smbusBus, busName string, cfg config.Lanner) (*lannerBackend, error) {
	hops, addr, err := lanner.Route(cfg.Board, cfg.Slot)
	if err != nil {
		return nil, fmt.Errorf("lanner: %w", err)
	}
	where := busName
	for _, h := range hops {
		where += fmt.Sprintf(" switch %#02x:%#02x", h.Switch, h.Channel)
	}
	where += fmt.Sprintf(" module %#02x", addr)
	b := &lannerBackend{m: &lannerModule{bus: bus, hops: hops, addr: addr, where: where}, bit: 1 << (cfg.Pair - 1)}
	id := map[byte]byte{}
	for _, cmd := range []byte{lanner.MajorVersion, lanner.MinorVersion, lanner.ModuleCaps, lanner.OffPairCaps,
		lanner.JustOnCaps, lanner.RunPairCaps, lanner.WDT1Caps, lanner.WDT3Caps} {
		v, err := b.m.read(cmd)
		if err != nil {
			return nil, fmt.Errorf("lanner: identifying the module (%s, board %s slot %d): %w", where, cfg.Board, cfg.Slot, err)
		}
		id[cmd] = v
	}
	mc := id[lanner.ModuleCaps]
	if mc&lanner.CapRunTime == 0 || id[lanner.RunPairCaps]&b.bit == 0 {
		return nil, fmt.Errorf("lanner: the module at %s has run-time bypass on pairs %08b, not on pair %d", where, id[lanner.RunPairCaps], cfg.Pair)
	}
	c := bypassapi.Caps{States: []bypassapi.State{bypassapi.Normal, bypassapi.Bypass}, Events: map[bypassapi.Event][]bypassapi.State{}, Fixed: map[bypassapi.Event]bypassapi.State{},
		ReadBack: true, ReadBackOf: bypassapi.ReadsController, LinkDownInBypass: true}
	if mc&lanner.CapSystemOff != 0 && id[lanner.OffPairCaps]&b.bit != 0 {
		c.Events[bypassapi.PowerOff] = []bypassapi.State{bypassapi.Normal, bypassapi.Bypass}
	}
	if mc&lanner.CapJustOn != 0 && id[lanner.JustOnCaps]&b.bit != 0 {
		c.Events[bypassapi.PowerUp] = []bypassapi.State{bypassapi.Normal, bypassapi.Bypass}
	}
	if mc&lanner.CapWDT1 != 0 && id[lanner.WDT1Caps] > 0 {
		c.Events[bypassapi.TimerExpiry] = []bypassapi.State{bypassapi.Bypass}
		c.Timer = &bypassapi.TimerCaps{Unit: time.Second, Min: time.Second, Max: time.Duration(id[lanner.WDT1Caps]) * time.Second, TimeLeft: true}
	}
	c.Notes = []string{
		fmt.Sprintf("Lanner Gen 3 module, firmware %d.%d, at %s, pair %d", id[lanner.MajorVersion], id[lanner.MinorVersion], where, cfg.Pair),
		"read-back is the module's run-time setting and its watchdog's status, not a sensor on the relay",
		"no disconnect state: the module only bypasses or connects",
		"watchdog 1 belongs to the module: its pairs share the timer",
	}
	if unit, err := b.m.read(lanner.WDTTimeUnit); err == nil {
		c.Notes = append(c.Notes, fmt.Sprintf("the module answers the watchdog time unit command (0x15) with %#02x; its encoding is not public, and ncpos counts watchdog 1 in seconds", unit))
	}
	b.caps = c
	if err := b.takeOver(mc, id[lanner.WDT3Caps]); err != nil {
		return nil, fmt.Errorf("lanner: taking over from the Just-On phase: %w", err)
	}
	return b, nil
}

// takeOver ends the module's Just-On phase without moving a relay. From
// power-on the relays follow the Just-On mask (0x11) until software sets
// the run-time mask (0x12); until then 0x12 says nothing about them. A
// running or expired Just-On watchdog (WDT3) shows that nobody has taken
// over since power-on: the run-time mask is then written with every pair
// the Just-On mask holds in bypass, so that the relays stay as they are
// and read back as they are, and WDT3 is stopped. A restarted bypassd
// finds it stopped and trusts 0x12. So that the sign is there at the next
// boot, WDT3 gets a time (its longest; its pair mask is left alone) and
// the settings are saved, once.
func (b *lannerBackend) takeOver(moduleCaps, wdt3Max byte) error {
	if moduleCaps&lanner.CapWDT3 == 0 {
		return nil
	}
	st, err := b.m.read(lanner.WDT3 + lanner.WDTStatus)
	if err != nil {
		return err
	}
	if st != lanner.WDTStopped {
		jo, err := b.m.read(lanner.JustOnBypass)
		if err != nil {
			return err
		}
		rt, err := b.m.read(lanner.RunBypass)
		if err != nil {
			return err
		}
		pairs, err := b.m.read(lanner.RunPairCaps)
		if err != nil {
			return err
		}
		if err := b.m.write(lanner.RunBypass, rt|jo&pairs); err != nil {
			return err
		}
		if err := b.m.write(lanner.WDT3+lanner.WDTStop, 0); err != nil {
			return err
		}
	}
	t, err := b.m.read(lanner.WDT3 + lanner.WDTTime)
	if err != nil || t != 0 || wdt3Max == 0 {
		return err
	}
	for _, w := range [][2]byte{{lanner.WDT3 + lanner.WDTTime, wdt3Max}, {lanner.SaveSettings, 0xff}} {
		if err := b.m.write(w[0], w[1]); err != nil {
			return err
		}
	}
	b.saves++
	return nil
}

func (b *lannerBackend) Caps() bypassapi.Caps { return b.caps }

// setBit writes reg with the pair's bit set or cleared and the other
// pairs' bits kept.
func (b *lannerBackend) setBit(reg byte, on bool) (changed bool, err error) {
	v, err := b.m.read(reg)
	if err != nil {
		return false, err
	}
	nv := v &^ b.bit
	if on {
		nv |= b.bit
	}
	if err := b.m.write(reg, nv); err != nil {
		return false, err
	}
	return nv != v, nil
}

func (b *lannerBackend) Set(s bypassapi.State) error {
	if s != bypassapi.Normal && s != bypassapi.Bypass {
		return fmt.Errorf("lanner: %s: %w", s, errUnsupported)
	}
	// After watchdog 1 expired, its pairs are in bypass whatever the
	// run-time setting says; stopping it hands them back to the setting.
	st, err := b.m.read(lanner.WDT1 + lanner.WDTStatus)
	if err != nil {
		return fmt.Errorf("lanner: %w", err)
	}
	if st == lanner.WDTExpired {
		if err := b.m.write(lanner.WDT1+lanner.WDTStop, 0); err != nil {
			return fmt.Errorf("lanner: %w", err)
		}
	}
	if _, err := b.setBit(lanner.RunBypass, s == bypassapi.Bypass); err != nil {
		return fmt.Errorf("lanner: setting %s: %w", s, err)
	}
	return nil
}

// Get reads the pair's run-time bit, and the watchdogs: an expired one
// holds its pairs in bypass whatever the run-time mask says.
func (b *lannerBackend) Get() (bypassapi.State, error) {
	for _, w := range []byte{lanner.WDT1, lanner.WDT2, lanner.WDT3} {
		st, err := b.m.read(w + lanner.WDTStatus)
		if err != nil {
			return bypassapi.Unknown, fmt.Errorf("lanner: %w", err)
		}
		if st != lanner.WDTExpired {
			continue
		}
		pairs, err := b.m.read(w + lanner.WDTPairs)
		if err != nil {
			return bypassapi.Unknown, fmt.Errorf("lanner: %w", err)
		}
		if pairs&b.bit != 0 {
			return bypassapi.Bypass, nil
		}
	}
	v, err := b.m.read(lanner.RunBypass)
	if err != nil {
		return bypassapi.Unknown, fmt.Errorf("lanner: %w", err)
	}
	if v&b.bit != 0 {
		return bypassapi.Bypass, nil
	}
	return bypassapi.Normal, nil
}

// defaultReg is the mask register of an event's default.
func defaultReg(e bypassapi.Event) (byte, bool) {
	switch e {
	case bypassapi.PowerOff:
		return lanner.OffBypass, true
	case bypassapi.PowerUp:
		return lanner.JustOnBypass, true
	case bypassapi.TimerExpiry:
		return lanner.WDT1 + lanner.WDTPairs, true
	}
	return 0, false
}

// SetDefault writes the event's mask and, only when that changed it,
// saves the settings to the module's non-volatile memory (as after a
// power cycle the module starts from what was saved).
func (b *lannerBackend) SetDefault(e bypassapi.Event, s bypassapi.State) error {
	reg, ok := defaultReg(e)
	if !ok || !b.caps.CanDefault(e, s) {
		return fmt.Errorf("lanner: %s default %s: %w", e, s, errUnsupported)
	}
	changed, err := b.setBit(reg, s == bypassapi.Bypass)
	if err != nil {
		return fmt.Errorf("lanner: %s default: %w", e, err)
	}
	if !changed {
		return nil
	}
	// 0xff is the value Lanner's field notes send with SaveSettings.
	if err := b.m.write(lanner.SaveSettings, 0xff); err != nil {
		return fmt.Errorf("lanner: saving the settings: %w", err)
	}
	b.saves++
	return nil
}

func (b *lannerBackend) Default(e bypassapi.Event) (bypassapi.State, error) {
	reg, ok := defaultReg(e)
	if !ok {
		return bypassapi.Unknown, errUnsupported
	}
	v, err := b.m.read(reg)
	if err != nil {
		return bypassapi.Unknown, fmt.Errorf("lanner: %w", err)
	}
	switch {
	case v&b.bit != 0:
		return bypassapi.Bypass, nil
	case e == bypassapi.TimerExpiry:
		return bypassapi.Unknown, nil // the pair does not react to the watchdog
	}
	return bypassapi.Normal, nil
}

// Arm loads watchdog 1 with d in whole seconds (within the module's
// range: the value in effect is returned) and starts it; then it stops
// the Just-On watchdog, whose work (a box that hangs while booting) is
// done once bypassd runs.
func (b *lannerBackend) Arm(d time.Duration) (time.Duration, error) {
	t := b.caps.Timer
	if t == nil {
		return 0, fmt.Errorf("lanner: watchdog 1: %w", errUnsupported)
	}
	secs := min(roundUp(d, time.Second), int64(t.Max/time.Second))
	for _, w := range [][2]byte{{lanner.WDT1 + lanner.WDTTime, byte(secs)}, {lanner.WDT1 + lanner.WDTStart, 0}} {
		if err := b.m.write(w[0], w[1]); err != nil {
			return 0, fmt.Errorf("lanner: arming watchdog 1: %w", err)
		}
	}
	if st, err := b.m.read(lanner.WDT3 + lanner.WDTStatus); err == nil && st != lanner.WDTStopped {
		if err := b.m.write(lanner.WDT3+lanner.WDTStop, 0); err != nil {
			return 0, fmt.Errorf("lanner: stopping the Just-On watchdog: %w", err)
		}
	}
	return time.Duration(secs) * time.Second, nil
}

func (b *lannerBackend) Kick() error {
	st, err := b.m.read(lanner.WDT1 + lanner.WDTStatus)
	if err != nil {
		return fmt.Errorf("lanner: %w", err)
	}
	if st == lanner.WDTExpired {
		return errTimerExpired
	}
	if err := b.m.write(lanner.WDT1+lanner.WDTStart, 0); err != nil {
		return fmt.Errorf("lanner: kicking watchdog 1: %w", err)
	}
	return nil
}

func (b *lannerBackend) Disarm() error {
	if err := b.m.write(lanner.WDT1+lanner.WDTStop, 0); err != nil {
		return fmt.Errorf("lanner: stopping watchdog 1: %w", err)
	}
	return nil
}

func (b *lannerBackend) TimeLeft() (time.Duration, error) {
	v, err := b.m.read(lanner.WDT1 + lanner.WDTLeft)
	if err != nil {
		return 0, fmt.Errorf("lanner: %w", err)
	}
	return time.Duration(v) * time.Second, nil
}

func (b *lannerBackend) Close() error { return b.m.bus.Close() }

// TimerExpired reads watchdog 1's status: the supervisor tells an expiry
// from a change made by someone else.
func (b *lannerBackend) TimerExpired() (bool, error) {
	st, err := b.m.read(lanner.WDT1 + lanner.WDTStatus)
	return st == lanner.WDTExpired, err
}
