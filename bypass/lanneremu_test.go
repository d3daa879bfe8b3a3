package bypass

import (
	"fmt"
	"maps"
	"time"

	"github.com/ncpos/ncpos/lanner"
)

// lannerMCU emulates the microcontroller of a Lanner Gen 3 bypass module
// at the level of its SMBus protocol, from the command set of
// package lanner (bpwd 1.2.9, bp_def.h): byte-data writes of settings,
// word reads that echo the command, the three pair masks, three
// watchdogs counting on a fake clock, and settings saved to and loaded
// from non-volatile memory.
//
// Where the public source says what a command is but not every effect,
// the emulator takes the reading that is hardest on its user, so that a
// backend that passes here does not depend on a kindness of the firmware:
//   - an expired watchdog holds its pairs in bypass until it is stopped or
//     started again, whatever the run-time mask says, and does not change
//     the run-time mask itself;
//   - at power-off the relays latch what the saved System-Off mask says
//     (an unsaved setting is lost with the power);
//   - at power-on the settings are the saved ones, the relays follow the
//     Just-On mask and watchdog 3 runs (if it has a time) until the
//     run-time mask is written or it is stopped.
type lannerMCU struct {
	major, minor                  byte
	caps, offCaps, joCaps, rtCaps byte
	wdt1Max, wdt2Max, wdt3Max     byte
	reg, nv, factory              map[byte]byte
	status                        map[byte]byte // per watchdog base
	left                          map[byte]int  // seconds left, per watchdog base
	relay                         byte          // the contacts: bit set = pair in bypass
	powered, justOn               bool
	elapsed                       time.Duration // clock time not yet counted
	saves, loads                  int
	violations                    []string
}

// settings are the commands whose value the module keeps.
var lannerSettings = []byte{lanner.OffBypass, lanner.JustOnBypass, lanner.RunBypass,
	lanner.WDT1 + lanner.WDTPairs, lanner.WDT1 + lanner.WDTTime,
	lanner.WDT2 + lanner.WDTPairs, lanner.WDT2 + lanner.WDTTime,
	lanner.WDT3 + lanner.WDTPairs, lanner.WDT3 + lanner.WDTTime}

// newLannerMCU is a two-pair module with every feature, as shipped: every
// pair in bypass at power-on and at run time, connected while the system
// is off, no watchdog armed. It is powered on.
func newLannerMCU() *lannerMCU {
	m := &lannerMCU{major: 1, minor: 6,
		caps:    lanner.CapSystemOff | lanner.CapJustOn | lanner.CapRunTime | lanner.CapWDT1 | lanner.CapWDT2 | lanner.CapWDT3,
		offCaps: 0x03, joCaps: 0x03, rtCaps: 0x03, wdt1Max: 255, wdt2Max: 255, wdt3Max: 255,
		factory: map[byte]byte{lanner.OffBypass: 0x00, lanner.JustOnBypass: 0x03, lanner.RunBypass: 0x03},
		status:  map[byte]byte{}, left: map[byte]int{},
	}
	m.nv = maps.Clone(m.factory)
	m.powerOn()
	return m
}

func (m *lannerMCU) powerOn() {
	m.powered, m.justOn = true, true
	m.reg = maps.Clone(m.nv)
	m.loads++
	for _, w := range []byte{lanner.WDT1, lanner.WDT2, lanner.WDT3} {
		m.status[w], m.left[w] = lanner.WDTStopped, 0
	}
	if t := m.reg[lanner.WDT3+lanner.WDTTime]; t > 0 {
		m.status[lanner.WDT3], m.left[lanner.WDT3] = lanner.WDTRunning, int(t)*lanner.WDT3Seconds
	}
	m.apply()
}

func (m *lannerMCU) powerOff() {
	m.powered = false
	m.relay = m.nv[lanner.OffBypass] & m.offCaps
}

// apply sets the contacts from the phase's mask and expired watchdogs.
func (m *lannerMCU) apply() {
	mask := m.reg[lanner.RunBypass]
	if m.justOn {
		mask = m.reg[lanner.JustOnBypass]
	}
	for _, w := range []byte{lanner.WDT1, lanner.WDT2, lanner.WDT3} {
		if m.status[w] == lanner.WDTExpired {
			mask |= m.reg[w+lanner.WDTPairs]
		}
	}
	m.relay = mask & m.rtCaps
}

// advance lets d pass on the module's clock.
func (m *lannerMCU) advance(d time.Duration) {
	if !m.powered {
		return
	}
	m.elapsed += d
	for ; m.elapsed >= time.Second; m.elapsed -= time.Second {
		for _, w := range []byte{lanner.WDT1, lanner.WDT2, lanner.WDT3} {
			if m.status[w] != lanner.WDTRunning {
				continue
			}
			if m.left[w]--; m.left[w] <= 0 {
				m.status[w] = lanner.WDTExpired
				m.apply()
			}
		}
	}
}

func (m *lannerMCU) wdtMax(w byte) byte {
	switch w {
	case lanner.WDT1:
		return m.wdt1Max
	case lanner.WDT2:
		return m.wdt2Max
	}
	return m.wdt3Max
}

func (m *lannerMCU) sendByte(v byte) error {
	m.violations = append(m.violations, fmt.Sprintf("send byte %#02x", v))
	return nil
}

// receiveByte: the module acknowledges a plain read; what it returns is
// not documented (0x80 here).
func (m *lannerMCU) receiveByte() (byte, error) {
	if !m.powered {
		return 0, errNack
	}
	return lanner.Success, nil
}

func (m *lannerMCU) readByteData(cmd byte) (byte, error) {
	if !m.powered {
		return 0, errNack
	}
	w, _ := m.readWordData(cmd)
	return byte(w), nil
}

func (m *lannerMCU) writeByteData(cmd, v byte) error {
	if !m.powered {
		return errNack
	}
	w, off := cmd&0xf0, cmd&0x0f
	switch {
	case cmd == lanner.OffBypass:
		m.reg[cmd] = v & m.offCaps
	case cmd == lanner.JustOnBypass:
		m.reg[cmd] = v & m.joCaps
	case cmd == lanner.RunBypass:
		m.reg[cmd] = v & m.rtCaps
		m.justOn = false
		m.apply()
	case cmd == lanner.SaveSettings:
		for _, c := range lannerSettings {
			m.nv[c] = m.reg[c]
		}
		m.saves++
	case cmd == lanner.LoadDefaults:
		m.reg = maps.Clone(m.factory)
		m.apply()
	case isWDT(w) && off == lanner.WDTPairs:
		m.reg[cmd] = v & m.rtCaps
		m.apply()
	case isWDT(w) && off == lanner.WDTTime:
		if v < 1 || v > m.wdtMax(w) {
			m.violations = append(m.violations, fmt.Sprintf("watchdog %#02x time %d outside 1..%d", w, v, m.wdtMax(w)))
			return nil
		}
		m.reg[cmd] = v
	case (w == lanner.WDT1 || w == lanner.WDT2) && off == lanner.WDTStart:
		t := int(m.reg[w+lanner.WDTTime])
		if t == 0 {
			m.violations = append(m.violations, fmt.Sprintf("watchdog %#02x started with no time", w))
			return nil
		}
		m.status[w], m.left[w] = lanner.WDTRunning, t
		m.apply()
	case isWDT(w) && off == lanner.WDTStop:
		m.status[w] = lanner.WDTStopped
		m.apply()
	default:
		m.violations = append(m.violations, fmt.Sprintf("write of unknown command %#02x=%#02x", cmd, v))
	}
	return nil
}

func (m *lannerMCU) readWordData(cmd byte) (uint16, error) {
	if !m.powered {
		return 0, errNack
	}
	w, off := cmd&0xf0, cmd&0x0f
	var v byte
	switch {
	case cmd == lanner.MajorVersion:
		v = m.major
	case cmd == lanner.MinorVersion:
		v = m.minor
	case cmd == lanner.ModuleCaps:
		v = m.caps
	case cmd == lanner.OffPairCaps:
		v = m.offCaps
	case cmd == lanner.JustOnCaps:
		v = m.joCaps
	case cmd == lanner.RunPairCaps:
		v = m.rtCaps
	case cmd == lanner.WDT1Caps:
		v = m.wdt1Max
	case cmd == lanner.WDT2Caps:
		v = m.wdt2Max
	case cmd == lanner.WDT3Caps:
		v = m.wdt3Max
	case cmd == lanner.OffBypass || cmd == lanner.JustOnBypass || cmd == lanner.RunBypass:
		v = m.reg[cmd]
	case isWDT(w) && off == lanner.WDTStatus:
		v = m.status[w]
	case isWDT(w) && (off == lanner.WDTPairs || off == lanner.WDTTime):
		v = m.reg[cmd]
	case isWDT(w) && off == lanner.WDTLeft:
		v = byte(max(m.left[w], 0))
		if w == lanner.WDT3 {
			v = byte((m.left[w] + lanner.WDT3Seconds - 1) / lanner.WDT3Seconds)
		}
	default:
		return 0x0000, nil // no echo: the command is unknown
	}
	return uint16(v)<<8 | uint16(cmd|lanner.Success), nil
}

// inBypass says whether the contacts of pair (1..8) are in bypass.
func (m *lannerMCU) inBypass(pair int) bool { return m.relay&(1<<(pair-1)) != 0 }

// isWDT says whether a command's high nibble is one of the watchdogs'.
func isWDT(base byte) bool { return base == lanner.WDT1 || base == lanner.WDT2 || base == lanner.WDT3 }
