// Package lanner holds the public facts of Lanner's "Generation 3" LAN
// bypass modules: the SMBus command set of their microcontroller and how
// each board reaches a module slot through its I2C switches. The bypass
// backend and its emulator both work from these facts; they carry no
// code of their source.
//
// Source, for every value here: Lanner's bypass/watchdog access code
// bpwd 1.2.9 (GPL-2.0, 2019), as published in the repository
// github.com/cveilleux/bpwd at commit 324428d: include/bp_def.h (command
// table), src/smbustst.c (the read-word framing in get_information, the
// switch table model_get_through_tbl and get_through_i2c_bus, the fixed
// module address after the switch) and readme (boards per mode, the
// on-board address). Only facts are taken; the code is our own.
package lanner

import (
	"fmt"
	"slices"
	"strings"
)

// Commands of the module's microcontroller (bp_def.h). A write is SMBus
// "write byte data" (command, value); a read is SMBus "read word data",
// whose low byte echoes the command ORed with Success and whose high byte
// is the value (smbustst.c get_information).
const (
	MajorVersion = 0x01 // MAJOR_VER_CMD
	MinorVersion = 0x02 // MINOR_VER_CMD
	ModuleCaps   = 0x03 // MODULE_CAP_CMD: the Cap* bits
	OffPairCaps  = 0x04 // SO_BP_CAP_CMD: pairs with System-Off bypass, one bit each
	JustOnCaps   = 0x05 // JO_BP_CAP_CMD: pairs with Just-On bypass
	RunPairCaps  = 0x06 // RT_BP_CAP_CMD: pairs with Run-Time bypass
	WDT1Caps     = 0x07 // RT_WDT1_CAP_CMD: longest WDT1 time, seconds ("1~N")
	WDT2Caps     = 0x08 // RT_WDT2_CAP_CMD: longest WDT2 time, seconds
	WDT3Caps     = 0x09 // JO_WDT3_CAP_CMD: longest WDT3 time, in 5 s units ("5~N*5")
	LoadDefaults = 0x0a // LOAD_DEFAULT_CMD: factory settings
	SaveSettings = 0x0b // SAVE_SETTING_CMD: current settings to non-volatile memory
	boardID      = 0x0c // BOARD_ID_CMD
	WDTTimeUnit  = 0x15 // WDT_TIME_UNIT_CMD: the watchdogs' time unit (bpwd 1.2.5 on; its encoding is not given)

	OffBypass    = 0x10 // SO_BP_SET_CMD: pairs in bypass while the system is off
	JustOnBypass = 0x11 // JO_BP_SET_CMD: pairs in bypass from power-on until run time
	RunBypass    = 0x12 // RT_BP_SET_CMD: pairs in bypass now (1 = bypass)

	// Each watchdog has six commands at Base+offset: WDT1 at 0x20
	// (RT_WDT1_*), WDT2 at 0x30 (RT_WDT2_*), WDT3, the Just-On watchdog,
	// at 0x40 (JO_WDT3_*, which has no start: it runs from power-on).
	WDT1 = 0x20
	WDT2 = 0x30
	WDT3 = 0x40

	WDTStatus   = 0x0 // *_STS_CMD: WDTStopped, WDTRunning or WDTExpired
	WDTPairs    = 0x1 // *_PAIR_CMD: pairs that go to bypass when it expires
	WDTTime     = 0x2 // *_TIMER_CMD: the timeout, seconds (WDT3: 5 s units)
	WDTLeft     = 0x3 // *_ESTIMATE_CMD: time left
	WDTStart    = 0x4 // *_START_CMD: start, and restart the count (write 0)
	WDTStop     = 0x5 // *_STOP_CMD
	WDT3Seconds = 5   // the unit of WDT3's time (the "1 scale = 5 seconds" of get_information)

	Success = 0x80 // CMD_SUCCESS
)

// Watchdog status values (WDT_STS_*).
const (
	WDTStopped = 0x00
	WDTRunning = 0x01
	WDTExpired = 0x02
)

// ModuleCaps bits (MODULE_CAP_*_BIT).
const (
	CapSystemOff = 0x01
	CapJustOn    = 0x02
	CapRunTime   = 0x04
	CapWDT1      = 0x08
	CapWDT2      = 0x10
	CapWDT3      = 0x20
)

// Module addresses (7-bit): a module behind a board's switches always
// answers at SlotAddress once its channel is selected; a controller on
// the main board answers at OnBoardAddress with no switch (readme).
const (
	slotAddress    = 0x30
	OnBoardAddress = 0x37
)

// Hop is one I2C switch on the way to a module: the channel mask sent to
// it with SMBus "send byte" (i2c_smbus_write_byte in get_through_i2c_bus).
type Hop struct {
	Switch  byte // 7-bit address of the PCA9545/PCA9548
	Channel byte // channel mask
}

// board is how one board family reaches its slots: the hops for slot
// 1..len(slots).
type board struct {
	models string  // Lanner models of the family (readme)
	slots  [][]Hop // per slot
}

func one(sw byte, channels ...byte) [][]Hop {
	var s [][]Hop
	for _, c := range channels {
		s = append(s, []Hop{{sw, c}})
	}
	return s
}

// boards are the families whose switch settings smbustst.c gives per
// slot, by the readme's model name (lower case). The two-level ones are
// listed hop by hop as get_through_i2c_bus sends them.
var boards = map[string]board{
	// MB-887X, "Mode1": PCA9545 at 0x73, slot 0x30..0x33 -> channel 1, 2, 4, 8.
	"mb-887x": {"MB-8875, MB-8876, MB-8865, MB-8866, MB-8877, MB-8771, NCB-5210", one(0x73, 0x01, 0x02, 0x04, 0x08)},
	// MB-8865EXT, "Mode3" (MB-8865 with RC-8865, 6 slots): 0x73 selects
	// the bottom (0x02, slots 1-3) or top (0x01, slots 4-6) module, then
	// a PCA9545 at 0x71 the slot.
	"mb-8865ext": {"MB-8865 with the RC-8865 expansion", [][]Hop{
		{{0x73, 0x02}, {0x71, 0x02}}, {{0x73, 0x02}, {0x71, 0x01}}, {{0x73, 0x02}, {0x71, 0x04}},
		{{0x73, 0x01}, {0x71, 0x01}}, {{0x73, 0x01}, {0x71, 0x02}}, {{0x73, 0x01}, {0x71, 0x04}},
	}},
	// MB-8895, "Mode7": PCA9548 at 0x72, slots 1..8 -> channels 0x01..0x80.
	"mb-8895": {"MB-8896, MB-8895, MB-8893, NCB-5510A", one(0x72, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)},
	// MB-9655, "Mode9": PCA9548 at 0x70, slots 1..3 -> channels 0x20, 0x40, 0x80.
	"mb-9655": {"MB-9655", one(0x70, 0x20, 0x40, 0x80)},
	// NCB-5220, "Mode11": slot 1 (on board) is channel 0x08 of the PCA9545
	// at 0x73; slots 2 and 3 are behind its channel 0x01 and then channel
	// 0x02 or 0x04 of a PCA9545 at 0x72.
	"ncb-5220": {"NCB-5220", [][]Hop{{{0x73, 0x08}}, {{0x73, 0x01}, {0x72, 0x02}}, {{0x73, 0x01}, {0x72, 0x04}}}},
	// NCB-2510, "Mode12": PCA9548 at 0x72, slots 1..3 -> 0x01, 0x20, 0x40.
	"ncb-2510": {"NCB-2510", one(0x72, 0x01, 0x20, 0x40)},
	// NCB-6210, "Mode13": switch at 0x73, slots 1..8 -> channels 0x01..0x80.
	"ncb-6210": {"NCB-6210", one(0x73, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)},
}

// onBoard is the board name of a controller on the main board (0x37, no
// switch: readme, "3rd bypass embedded on motherboard").
const onBoard = "onboard"

// Boards lists the board names a profile may give, sorted.
func Boards() []string {
	names := []string{onBoard}
	for n := range boards {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Route returns the switch hops and the module address for slot of
// board (slot 0 for OnBoard).
func Route(boardName string, slot int) ([]Hop, byte, error) {
	if boardName == onBoard {
		if slot != 0 {
			return nil, 0, fmt.Errorf("board %q has no slots, want slot 0", onBoard)
		}
		return nil, OnBoardAddress, nil
	}
	b, ok := boards[boardName]
	if !ok {
		return nil, 0, fmt.Errorf("unknown board %q, want one of %s", boardName, strings.Join(Boards(), ", "))
	}
	if slot < 1 || slot > len(b.slots) {
		return nil, 0, fmt.Errorf("board %q (%s) has slots 1..%d, not %d", boardName, b.models, len(b.slots), slot)
	}
	return b.slots[slot-1], slotAddress, nil
}

// SwitchAddresses lists every switch address any board uses, for a probe
// that looks for them without writing.
func SwitchAddresses() []byte {
	var out []byte
	for _, b := range boards {
		for _, s := range b.slots {
			for _, h := range s {
				if !slices.Contains(out, h.Switch) {
					out = append(out, h.Switch)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Word decodes a read-word answer to cmd: the value, or an error when the
// module did not echo the command (it does not know it, or something
// else answered).
func Word(cmd byte, w uint16) (byte, error) {
	if echo := byte(w); echo != cmd|Success {
		return 0, fmt.Errorf("command %#02x: answer %#04x does not echo %#02x (unsupported command or not a Lanner module)", cmd, w, cmd|Success)
	}
	return byte(w >> 8), nil
}
