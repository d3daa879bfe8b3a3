package bypass

import (
	"fmt"
	"time"

	"github.com/ncpos/ncpos/bypass/ixgbe"
)

// ixgbeFirmware emulates the bypass firmware of an Intel 82599 or X540
// bypass adapter as the host sees it: pin levels on the NIC's ESDP
// register. It follows the serial protocol bit by bit (start and stop
// conditions, data sampled on SCK's rising edge, its own word on SDO),
// keeps CTL0 in an EEPROM whose writes take a while (reads in the
// meantime report no state), runs the watchdog on a fake clock and
// applies the actions of power events. It checks the host's side of the
// protocol too: pin directions, the half-clock wait, whole 32-bit words.
//
// Where the public sources leave a behaviour open, the emulator takes
// the reading hardest on its user: an EEPROM write is lost when another
// arrives while it is busy; the watchdog counts from power-on when it is
// enabled; after it expires it stays expired until petted.
type ixgbeFirmware struct {
	pins    ixgbe.Pins
	now     time.Time
	esdp    uint32 // as the host wrote it
	sdo     bool   // the firmware's output pin
	lastPin time.Time

	// the exchange in progress
	active bool
	nbits  int
	in     uint32
	out    uint32 // the page's word, shifted out once the page is known

	ctl0        uint32 // stored: actions, watchdog enable and time
	state       uint32
	busyUntil   time.Time
	pending     *uint32 // a CTL0 write in flight
	eepromAddr  uint32
	eeprom      [256]byte
	clockBase   uint32
	clockSet    time.Time
	lastPet     time.Time
	expired     bool
	forced      bool // the last CTL0 write commanded a state: events are ignored until mode auto
	powered     bool
	exchanges   int
	eepromWrite int       // CTL0 writes that changed what it stores
	stateCmds   int       // CTL0 writes of a mode
	stateAt     time.Time // when the last one took
	violations  []string
}

// ixgbeEEPROMWrite is how long the firmware takes to store CTL0.
const ixgbeEEPROMWrite = 150 * time.Millisecond

// newIxgbeFirmware is a powered-on adapter as shipped: bypass when
// unplugged, when power comes back and on watchdog expiry, normal at power
// on, no change when the OS shuts down, watchdog off; firmware version 3.
func newIxgbeFirmware(device uint16, now time.Time) *ixgbeFirmware {
	pins, err := ixgbe.PinsOf(device)
	if err != nil {
		panic(err)
	}
	f := &ixgbeFirmware{pins: pins, now: now}
	f.ctl0 = ixgbe.Bypass<<ixgbe.AuxOffShift | ixgbe.Bypass<<ixgbe.AuxOnShift | ixgbe.Normal<<ixgbe.MainOnShift |
		ixgbe.Nop<<ixgbe.MainOffShift | ixgbe.Bypass<<ixgbe.WDTimeoutShift
	f.eeprom[ixgbe.VersionAddr] = 3
	f.state = ixgbe.Bypass
	f.powerOn()
	return f
}

func (f *ixgbeFirmware) action(shift uint32) uint32 { return f.ctl0 >> shift & ixgbe.FieldMask }

// event applies an event's action, unless a state command holds the
// firmware out of auto mode ("Set AUTO back on so FW can receive events",
// ixgbe_bypass_state_store).
func (f *ixgbeFirmware) event(shift uint32) {
	if f.forced {
		return
	}
	if a := f.action(shift); a != ixgbe.Nop {
		f.state = a
	}
}

// powerOn: power plugged in, then the box powers up.
func (f *ixgbeFirmware) powerOn() {
	f.powered = true
	f.event(ixgbe.AuxOnShift)
	f.event(ixgbe.MainOnShift)
	f.lastPet, f.expired = f.now, false
}

// osOff: the OS shuts down, standby power stays.
func (f *ixgbeFirmware) osOff() { f.event(ixgbe.MainOffShift) }

// powerOff: unplugged.
func (f *ixgbeFirmware) powerOff() {
	f.event(ixgbe.AuxOffShift)
	f.powered = false
}

// advance lets d pass on the firmware's clock.
func (f *ixgbeFirmware) advance(d time.Duration) {
	f.now = f.now.Add(d)
	f.tick()
}

func (f *ixgbeFirmware) tick() {
	if f.pending != nil && !f.now.Before(f.busyUntil) {
		w := *f.pending
		f.pending = nil
		if stored := w & (ixgbe.EventMask | ixgbe.WDTEnable); stored != f.ctl0 {
			if f.ctl0&ixgbe.WDTEnable == 0 && stored&ixgbe.WDTEnable != 0 {
				f.lastPet = f.now
			}
			f.ctl0 = stored
			f.eepromWrite++
		}
		if m := w & ixgbe.ModeMask; m != ixgbe.Nop {
			f.state, f.stateAt, f.forced = m, f.now, true
			f.stateCmds++
		} else {
			f.forced = false
		}
	}
	if f.powered && f.ctl0&ixgbe.WDTEnable != 0 && !f.expired &&
		f.now.Sub(f.lastPet) >= ixgbe.WDTTime(f.ctl0>>ixgbe.WDTValueShift) {
		f.expired = true
		f.event(ixgbe.WDTimeoutShift)
	}
}

// word is what the firmware shifts out for page.
func (f *ixgbeFirmware) word(page uint32) uint32 {
	switch page {
	case ixgbe.CTL0:
		if f.pending != nil {
			return 0 // busy storing: no state
		}
		return f.ctl0 | f.state<<ixgbe.StatusShift
	case ixgbe.CTL1:
		return ixgbe.Valid | (f.clockBase+uint32(f.now.Sub(f.clockSet)/time.Second))&ixgbe.TimeMask
	case ixgbe.CTL2:
		return f.eepromAddr<<ixgbe.OffsetShift | uint32(f.eeprom[f.eepromAddr])
	}
	return 0
}

func (f *ixgbeFirmware) execute(cmd uint32) {
	f.exchanges++
	if cmd&ixgbe.WE == 0 {
		return
	}
	switch cmd & ixgbe.PageMask {
	case ixgbe.CTL0:
		if f.pending != nil {
			f.violations = append(f.violations, fmt.Sprintf("CTL0 write %#08x while the EEPROM is busy: lost", cmd))
			return
		}
		w := cmd
		f.pending, f.busyUntil = &w, f.now.Add(ixgbeEEPROMWrite)
	case ixgbe.CTL1:
		if cmd&ixgbe.WDTPet != 0 {
			f.lastPet, f.expired = f.now, false
		}
		if cmd&ixgbe.Valid != 0 {
			f.clockBase, f.clockSet = cmd&ixgbe.TimeMask, f.now
		}
	case ixgbe.CTL2:
		f.eepromAddr = (cmd & ixgbe.OffsetMask) >> ixgbe.OffsetShift
	}
}

func (f *ixgbeFirmware) Read() uint32 {
	v := f.esdp &^ f.pins.SDO
	if f.sdo {
		v |= f.pins.SDO
	}
	return v
}

func (f *ixgbeFirmware) Write(v uint32) {
	p := f.pins
	old := f.esdp
	f.esdp = v
	changed := (old ^ v) & (p.SCK | p.SDI)
	if changed == 0 || !f.powered {
		return
	}
	if v&ixgbe.Dir(p.SCK) == 0 || v&ixgbe.Dir(p.SDI) == 0 || v&ixgbe.Dir(p.SDO) != 0 {
		f.violations = append(f.violations, fmt.Sprintf("pins changed with directions %#04x", v&0xff00))
	}
	if d := f.now.Sub(f.lastPin); d < ixgbe.HalfClock {
		f.violations = append(f.violations, fmt.Sprintf("pins changed %v after the last change, want %v", d, ixgbe.HalfClock))
	}
	f.lastPin = f.now
	f.tick()
	sckHigh, wasSCK := v&p.SCK != 0, old&p.SCK != 0
	sdiHigh, wasSDI := v&p.SDI != 0, old&p.SDI != 0
	switch {
	case sckHigh && wasSCK && wasSDI && !sdiHigh: // start
		f.active, f.nbits, f.in = true, 0, 0
	case sckHigh && wasSCK && !wasSDI && sdiHigh: // stop
		if f.active {
			if f.nbits != ixgbe.Bits {
				f.violations = append(f.violations, fmt.Sprintf("exchange of %d bits", f.nbits))
			} else {
				f.execute(f.in)
			}
		}
		f.active = false
	case f.active && sckHigh && !wasSCK && f.nbits == ixgbe.Bits:
		// the clock of the stop condition
	case f.active && sckHigh && !wasSCK: // rising edge: sample SDI, present our bit
		f.in <<= 1
		if sdiHigh {
			f.in |= 1
		}
		f.nbits++
		if f.nbits == 2 {
			f.out = f.word(f.in << 30)
		}
		f.sdo = f.nbits > 2 && f.out>>(ixgbe.Bits-f.nbits)&1 == 1
	}
}
