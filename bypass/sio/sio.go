// Package sio identifies Super I/O chips, whose GPIO pins drive the
// bypass relays of many boards, by their ID registers.
//
// Facts, from Linux's watchdog drivers (GPL-2.0; facts only, the code is
// ours): drivers/watchdog/w83627hf_wdt.c for the Winbond and Nuvoton
// family (configuration ports 0x2E and 0x4E, entry key 0x87 twice, exit
// key 0xAA, device ID in register 0x20, 0xFF when nothing answers, and the
// chip IDs), drivers/watchdog/f71808e_wdt.c for Fintek's (the same keys,
// a two-byte device ID at 0x20 and the manufacturer ID 0x1934 at 0x23).
package sio

import "strings"

// The configuration ports and keys.
var Ports = []uint16{0x2e, 0x4e}

const (
	EnterKey  = 0x87 // written twice to the index port
	ExitKey   = 0xaa
	RegDevID  = 0x20 // high byte of the device ID; 0x21 the low byte
	RegManID  = 0x23 // Fintek: manufacturer ID, two bytes
	fintekID  = 0x1934
	NoChip    = 0xff
	regLogDev = 0x07
)

// winbond are Winbond and Nuvoton chips by register 0x20 (W83627HF_ID ...).
var winbond = map[byte]string{
	0x52: "Winbond W83627HF", 0x59: "Winbond W83627S", 0x60: "Winbond W83697HF", 0x68: "Winbond W83697UG",
	0x70: "Winbond W83637HF", 0x82: "Winbond W83627THF", 0x85: "Winbond W83687THF", 0x88: "Winbond W83627EHF",
	0xa0: "Winbond W83627DHG", 0xa2: "Winbond W83627UHG", 0xa5: "Winbond W83667HG", 0xb0: "Winbond W83627DHG-P",
	0xb3: "Winbond W83667HG-B", 0xb4: "Nuvoton NCT6775", 0xc3: "Nuvoton NCT6776", 0xc4: "Nuvoton NCT6102",
	0xc5: "Nuvoton NCT6779", 0xc8: "Nuvoton NCT6791", 0xc9: "Nuvoton NCT6792", 0xd1: "Nuvoton NCT6793",
	0xd2: "Nuvoton NCT6116", 0xd3: "Nuvoton NCT6795", 0xd4: "Nuvoton NCT6796",
}

// fintek are Fintek chips by their two-byte device ID (SIO_F*_ID).
var fintek = map[uint16]string{
	0x0901: "Fintek F71808E", 0x1001: "Fintek F71808A", 0x0507: "Fintek F71858", 0x0601: "Fintek F71862",
	0x1106: "Fintek F71868", 0x0814: "Fintek F71869", 0x1007: "Fintek F71869A", 0x0541: "Fintek F71882",
	0x0723: "Fintek F71889", 0x0909: "Fintek F71889E", 0x1005: "Fintek F71889A", 0x0704: "Fintek F81865",
	0x1010: "Fintek F81866", 0x1502: "Fintek F81966",
}

// Name names the chip of a device ID (0x20, 0x21) and manufacturer ID
// (0x23, 0x24), or returns "" for a chip not in the tables.
func Name(id, manufacturer uint16) string {
	if manufacturer == fintekID {
		return fintek[id]
	}
	return winbond[byte(id>>8)]
}

// Family names the chip's family: "winbond" (Winbond and Nuvoton, the
// GPIO layout of the Super I/O bypass maps in ncpos's profiles), "fintek",
// or "" for a chip not in the tables.
func Family(id, manufacturer uint16) string {
	if manufacturer == fintekID {
		if _, ok := fintek[id]; ok {
			return "fintek"
		}
		return ""
	}
	if _, ok := winbond[byte(id>>8)]; ok {
		return "winbond"
	}
	return ""
}

// FamilyOfDriver is the family of the chip behind a kernel watchdog's
// identity ("W83627HF Watchdog", "NCT6776 watchdog", "f71808e_wdt"), or
// "" when it is no Super I/O watchdog.
func FamilyOfDriver(identity string) string {
	id := strings.ToLower(identity)
	switch {
	case strings.Contains(id, "w836") || strings.Contains(id, "nct6"):
		return "winbond"
	case strings.Contains(id, "f718") || strings.Contains(id, "f818") || strings.Contains(id, "fintek"):
		return "fintek"
	}
	return ""
}
