package bypassapi

import "time"

// HardwareProbe is what bypass and watchdog hardware a box has, as bypassd
// finds it at its first start in a boot, before it drives anything, and
// without writing to any of it: an operator of an unknown box sees where
// they stand before anything is written. bypassd keeps it in
// /run/ncpos/hardware.json; statusd serves it on /api/v1/hardware.
type HardwareProbe struct {
	Time      time.Time        `json:"time"`
	NICs      []ProbedNIC      `json:"nics"`
	SuperIO   []ProbedSuperIO  `json:"superio"`
	SMBus     []ProbedSMBus    `json:"smbus"`
	Watchdogs []ProbedWatchdog `json:"watchdogs"`
	// Fits says, for every bypass pair of every compiled-in profile with
	// hardware the probe can recognise, whether that hardware was found.
	Fits   []ProfileFit `json:"fits"`
	Errors []string     `json:"errors,omitempty"` // what could not be looked at
}

// BypassSupport is what ncpos can do with a piece of bypass hardware.
type BypassSupport string

const (
	// SupportDrivable: bypassd drives it out of the box.
	SupportDrivable BypassSupport = "drivable"
	// SupportOperatorMap: bypassd can drive it once an operator fills in
	// the register map (bypass/PROFILES.md).
	SupportOperatorMap BypassSupport = "operator_map"
	// SupportNone: ncpos as built cannot drive it.
	SupportNone BypassSupport = "not_supported"
)

// ProbedNIC is one network PCI function.
type ProbedNIC struct {
	PCI        string   `json:"pci"`
	ID         string   `json:"id"`        // vendor:device
	Subsystem  string   `json:"subsystem"` // subsystem vendor:device
	Driver     string   `json:"driver,omitempty"`
	Interfaces []string `json:"interfaces,omitempty"`
	// Bypass names the bypass hardware this function is ("" for none
	// known), with what ncpos can do with it and why.
	Bypass  string        `json:"bypass,omitempty"`
	Support BypassSupport `json:"support,omitempty"`
	Note    string        `json:"note,omitempty"`
}

// ProbedSuperIO is a Super I/O chip answering its ID registers, or one a
// kernel driver already drives (Port 0: not probed, so as not to race it).
type ProbedSuperIO struct {
	Port   uint16 `json:"port"`             // configuration index port; 0 when not probed
	ID     uint16 `json:"id"`               // registers 0x20 (high byte) and 0x21
	Chip   string `json:"chip"`             // "" when the ID is not known
	Family string `json:"family"`           // "winbond" (Winbond/Nuvoton), "fintek" or ""
	Driver string `json:"driver,omitempty"` // the kernel driver that has it, when not probed
}

// ProbedSMBus is one SMBus adapter and the addresses that answered a
// read.
type ProbedSMBus struct {
	Bus     int             `json:"bus"`
	Name    string          `json:"name"`
	Answers []ProbedAddress `json:"answers"`
}

// ProbedAddress is an address that acknowledged a receive-byte read.
type ProbedAddress struct {
	Address uint8  `json:"address"`
	Value   uint8  `json:"value"` // the byte it returned
	Maybe   string `json:"maybe"` // what answers there on the boards ncpos knows
}

// ProbedWatchdog is a watchdog device the kernel has.
type ProbedWatchdog struct {
	Device   string `json:"device"`
	Identity string `json:"identity"`
}

// ProfileFit is one profile's bypass pair against what was found.
type ProfileFit struct {
	Profile string        `json:"profile"`
	Pair    string        `json:"pair"`
	Backend string        `json:"backend"`
	Support BypassSupport `json:"support"`
	Found   bool          `json:"found"`
	Why     string        `json:"why"`
}

// HardwareFile is where bypassd keeps the boot's probe in the run folder.
const HardwareFile = "hardware.json"
