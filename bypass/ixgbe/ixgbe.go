// Package ixgbe holds the public facts of the bypass firmware on Intel's
// 82599 and X540 bypass server adapters: the pins of the NIC's ESDP
// register it is bit-banged on, and the layout of its three 32-bit
// control pages. The bypass backend and its emulator both work from
// these facts.
//
// Sources (BSD-3-Clause, Intel 2010-2014), in DPDK's ixgbe driver
// (drivers/net/ixgbe, later drivers/net/intel/ixgbe):
// ixgbe_bypass_defines.h (pages, fields, action and watchdog codes, the
// 82599 bypass device ID), ixgbe_bypass_api.h (ixgbe_bypass_rw_generic:
// the pins per MAC and the bit-bang sequence; ixgbe_bypass_valid_rd_generic
// and ixgbe_bypass_set_generic: the read-back check and the slow EEPROM
// writes of page CTL0), ixgbe_bypass.c (state, event, watchdog and pet
// sequences; only PCI function 0 drives the pair). FreeBSD's
// sys/dev/ixgbe/if_bypass.c drives the same firmware for the X540 bypass
// adapter (device 0x155C, ixgbe_type.h).
package ixgbe

import (
	"fmt"
	"time"
)

// PCI IDs of the bypass SKUs (IXGBE_DEV_ID_82599_BYPASS, IXGBE_DEV_ID_X540_BYPASS).
const (
	VendorIntel   = 0x8086
	Device82599BP = 0x155d
	DeviceX540BP  = 0x155c
)

// ESDP is the Extended SDP Control register, at this offset in BAR 0.
// Bit n is the level of SDPn; bit n+8 makes SDPn an output.
const ESDP = 0x20

// Pins are the ESDP bits of the serial link to the bypass firmware: the
// host drives the clock (SCK) and its data (SDI), and reads the
// firmware's data (SDO).
type Pins struct {
	SCK, SDI, SDO uint32
}

// Dir is the direction bit of a pin.
func Dir(pin uint32) uint32 { return pin << 8 }

// PinsOf returns the pins of a bypass device (82599: SCK SDP7, SDI SDP0,
// SDO SDP6; X540: SCK SDP2, SDI SDP0, SDO SDP1).
func PinsOf(device uint16) (Pins, error) {
	switch device {
	case Device82599BP:
		return Pins{SCK: 1 << 7, SDI: 1 << 0, SDO: 1 << 6}, nil
	case DeviceX540BP:
		return Pins{SCK: 1 << 2, SDI: 1 << 0, SDO: 1 << 1}, nil
	}
	return Pins{}, fmt.Errorf("PCI device %04x is not an Intel bypass adapter (82599 %04x, X540 %04x)", device, Device82599BP, DeviceX540BP)
}

// HalfClock is the wait after every pin change and after every sample
// (IXGBE_BYPASS_BB_WAIT, 1 ms): a 32-bit exchange takes 134 of them.
const HalfClock = time.Millisecond

// Bits is the length of one exchange: the host clocks out a command word
// MSB first and clocks in the firmware's word at the same time.
const Bits = 32

// Command word: bits 31:30 the page, bit 29 write enable.
const (
	PageMask = 0xc0000000
	CTL0     = 0x00000000 // configuration, kept in the firmware's EEPROM
	CTL1     = 0x40000000 // time and watchdog pet
	CTL2     = 0x80000000 // EEPROM access and event log
	WE       = 0x20000000
)

// CTL0 fields.
const (
	ModeMask       = 0x00000003 // bits 1:0, write: change state now (0 = auto: follow events)
	StatusMask     = 0x0000000c // bits 3:2, read: the state now (0 never valid)
	StatusShift    = 2
	AuxOnShift     = 4  // action when auxiliary power comes on (power plugged in)
	MainOnShift    = 6  // action at main power on (the box powers up)
	MainOffShift   = 8  // action at main power off (OS shutdown, standby power on)
	AuxOffShift    = 10 // action at auxiliary power off (unplugged)
	WDTimeoutShift = 12 // action when the watchdog expires
	FieldMask      = 0x3
	WDTEnable      = 0x00004000 // bit 14
	WDTValueMask   = 0x00070000 // bits 18:16
	WDTValueShift  = 16
	// EventMask covers every field that a read-back must return as
	// written: the event actions and the watchdog time.
	EventMask = FieldMask<<AuxOnShift | FieldMask<<MainOnShift | FieldMask<<MainOffShift |
		FieldMask<<AuxOffShift | FieldMask<<WDTimeoutShift | WDTValueMask
)

// States and actions (BYPASS_NOP/AUTO, NORM, BYPASS, ISOLATE).
const (
	Nop     = 0 // as an action: leave the state; as a mode: auto
	Normal  = 1
	Bypass  = 2
	Isolate = 3
)

// CTL1 fields.
const (
	TimeMask = 0x01ffffff // seconds
	Valid    = 0x02000000
	OffTRst  = 0x04000000 // reset the time offset
	WDTPet   = 0x08000000
)

// CTL2 fields.
const (
	DataMask    = 0x000000ff
	OffsetShift = 8
	OffsetMask  = 0x0000ff00
	// VersionAddr is the firmware version's EEPROM address.
	VersionAddr = 0x02
)

// CTL0Tries is how many read-backs an EEPROM write of CTL0 gets before
// it counts as failed (ixgbe_bypass_set_generic's "count++ > 5": six); a
// pet gets PetTries (ixgbe_bypass_wd_reset's "count++ > 10": eleven).
const (
	CTL0Tries = 6
	PetTries  = 11
)

// wdtTimes are the watchdog codes 0..7 (BYPASS_WDT_1 .. BYPASS_WDT_32).
var wdtTimes = []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second, 3 * time.Second,
	4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second}

// WDTCode returns the shortest watchdog code whose time is at least d
// (the longest, 32 s, for anything longer) and that time.
func WDTCode(d time.Duration) (uint32, time.Duration) {
	for i, t := range wdtTimes {
		if t >= d {
			return uint32(i), t
		}
	}
	return uint32(len(wdtTimes) - 1), wdtTimes[len(wdtTimes)-1]
}

// WDTTime is the time of a watchdog code.
func WDTTime(code uint32) time.Duration { return wdtTimes[code&7] }

// ValidRead says whether out, read back after writing in, shows the
// write took (ixgbe_bypass_valid_rd_generic): the same page; for CTL0
// the same event actions and watchdog time and a status that is not 0;
// for CTL1 the same valid bit and time.
func ValidRead(in, out uint32) bool {
	if in&PageMask != out&PageMask {
		return false
	}
	switch in & PageMask {
	case CTL0:
		return out&EventMask == in&EventMask && out&StatusMask != 0
	case CTL1:
		const m = Valid | TimeMask
		return out&m == in&m
	}
	return true
}
