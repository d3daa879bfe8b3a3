package config

import (
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/lanner"
)

// This file is the schema of a bypass pair's backend in a platform profile:
// how bypassd reaches the relay of one pair of ports. The format is
// documented with examples in bypass/PROFILES.md; the checks here make sure
// that no register, port, address or file outside what the hardware can
// have is ever written, and that every state a profile names is spelled
// right.

// RelayStates are the states of a bypass relay as profiles spell them:
// bypassd's states (bypassapi.States, which a test of package bypass
// holds them to).
var RelayStates = []string{"normal", "bypass", "disconnect"}

// Bypass relay states and the events that have a hardware default, as
// profiles spell them.
var (
	bypassStates = RelayStates
	bypassEvents = []string{"power_off", "power_up", "timer_expiry"}
	// registerMaps says where a pair's register map (or command set) came
	// from; "missing" means the vendor has not published it and the
	// operator has not filled it in, so bypassd cannot drive the relay.
	registerMaps = []string{"vendor", "operator", "missing"}
)

// RegBits is one read-modify-write of a register: the bits under Mask are
// set to Value, the others are kept. For superio the register is a
// configuration register of the logical device, for smbus an SMBus command
// (register) of the controller, for ioport an I/O port address.
type RegBits struct {
	Reg   int `toml:"reg"`
	Mask  int `toml:"mask"`
	Value int `toml:"value"`
	// LDN (superio only) selects another logical device for this write;
	// 0 means the pair's superio.logical_device.
	LDN int `toml:"ldn"`
}

// RegStates are the register writes that select each state, either of the
// relay itself or of one of its event defaults. A state without writes is
// one the hardware (or the map) does not offer. Reading back, a state is
// recognised when every one of its writes reads back as written.
type RegStates = Writes[[]RegBits]

// RegTimer is the bypass controller's own watchdog timer in registers: a
// count register loaded with ceil(timeout/unit), counting down when
// CountsDown (and then readable as the time left).
type RegTimer struct {
	Reg        int       `toml:"reg"`         // count register
	Unit       Duration  `toml:"unit"`        // one count; 0 = the hardware has no timer
	Max        int       `toml:"max"`         // largest count
	CountsDown bool      `toml:"counts_down"` // the count register reads the time left
	Arm        []RegBits `toml:"arm"`         // after loading the count: start the timer
	Disarm     []RegBits `toml:"disarm"`      // stop it; empty: load a count of 0
	Kick       []RegBits `toml:"kick"`        // restart the count; empty: load the count again
}

// RegisterMap is the register-level description of one relay, shared by
// the superio, smbus and ioport backends.
type RegisterMap struct {
	Init        []RegBits `toml:"init"` // once at start: pin functions, GPIO directions
	State       RegStates `toml:"state"`
	PowerOff    RegStates `toml:"power_off"`
	PowerUp     RegStates `toml:"power_up"`
	TimerExpiry RegStates `toml:"timer_expiry"`
	Timer       RegTimer  `toml:"timer"`
}

// SuperIO reaches GPIO pins of a Winbond W83627-class Super I/O through
// /dev/port: index/data port pair, an entry key written twice to the index
// port, a logical device selected through register 0x07, and an exit key.
// Zero values take the W83627 defaults.
type SuperIO struct {
	Device        string `toml:"device"`         // default "/dev/port"
	IndexPort     int    `toml:"index_port"`     // default 0x2e
	DataPort      int    `toml:"data_port"`      // default 0x2f
	EnterKey      []int  `toml:"enter_key"`      // default [0x87, 0x87]
	ExitKey       int    `toml:"exit_key"`       // default 0xaa
	LogicalDevice int    `toml:"logical_device"` // GPIO logical device number (LDN)
}

// WithDefaults fills in the W83627 defaults for zero fields.
func (s SuperIO) WithDefaults() SuperIO {
	if s.Device == "" {
		s.Device = "/dev/port"
	}
	if s.IndexPort == 0 {
		s.IndexPort = 0x2e
	}
	if s.DataPort == 0 {
		s.DataPort = s.IndexPort + 1
	}
	if len(s.EnterKey) == 0 {
		s.EnterKey = []int{0x87, 0x87}
	}
	if s.ExitKey == 0 {
		s.ExitKey = 0xaa
	}
	return s
}

// SMBus reaches a bypass controller at an address on /dev/i2c-<Bus> with
// byte-data reads and writes.
type SMBus struct {
	Bus     int  `toml:"bus"`     // /dev/i2c-N
	Address int  `toml:"address"` // 7-bit address, 0x03..0x77
	Force   bool `toml:"force"`   // I2C_SLAVE_FORCE: a kernel driver holds the address
}

// Lanner reaches one pair of a Lanner "Generation 3" bypass module: its
// microcontroller on the PCH's SMBus, behind the board's I2C switches for
// a LAN module slot (see package lanner for the boards and the sources).
type Lanner struct {
	// Board names how the module is reached: "onboard" (a controller on
	// the main board, no switch) or a board family of package lanner
	// ("mb-887x" for the FW-8865's MB-8865, ...).
	Board string `toml:"board"`
	Slot  int    `toml:"slot"` // LAN module slot, 1..; 0 with board "onboard"
	Pair  int    `toml:"pair"` // the pair on the module, 1..8 (bit pair-1 of its masks)
	// Adapter is the name the SMBus adapter gives in sysfs, matched as a
	// prefix: the bus number is found at run time. Default "SMBus I801
	// adapter" (the Intel PCH's, i2c-i801).
	Adapter string `toml:"adapter"`
	// Bus, when set, is /dev/i2c-N itself, instead of finding Adapter.
	Bus *int `toml:"bus"`
}

// defaultLannerAdapter is the sysfs name prefix of the Intel PCH SMBus
// controller that Lanner's boards use (i2c-i801).
const defaultLannerAdapter = "SMBus I801 adapter"

// WithDefaults fills in the adapter name.
func (l Lanner) WithDefaults() Lanner {
	if l.Adapter == "" {
		l.Adapter = defaultLannerAdapter
	}
	return l
}

// IOPort reaches relay registers that are plain I/O ports (the registers of
// the map are port addresses) through /dev/port.
type IOPort struct {
	Device string `toml:"device"` // default "/dev/port"
}

// FileWrite writes Value to File (relative to the backend's directory).
type FileWrite struct {
	File  string `toml:"file"`
	Value string `toml:"value"`
}

// FileStates are the file writes that select each state; reading back, a
// state is recognised when each file reads (trimmed) as written.
type FileStates = Writes[[]FileWrite]

// FileTimer is a vendor driver's bypass watchdog in files: File takes the
// timeout as a count of Unit (0 stops it), Kick restarts it, Left (if set)
// reads the time left in Unit.
type FileTimer struct {
	File string      `toml:"file"`
	Unit Duration    `toml:"unit"`
	Max  int         `toml:"max"`
	Kick []FileWrite `toml:"kick"`
	Left string      `toml:"left"`
}

// Sysfs drives a relay through a vendor driver's files (Chelsio-style
// /sys/class/net/<if>/bypass/*, Silicom /proc/net/bypass/bypass_<if>/*).
// Dir may contain {if} and {if2}, the kernel names of the pair's ports.
type Sysfs struct {
	Dir         string     `toml:"dir"`
	State       FileStates `toml:"state"`
	PowerOff    FileStates `toml:"power_off"`
	PowerUp     FileStates `toml:"power_up"`
	TimerExpiry FileStates `toml:"timer_expiry"`
	Timer       FileTimer  `toml:"timer"`
}

// Bpctl drives a Silicom bypass adapter through its bpctl driver's ioctls
// on Device (default /dev/bpctl0); the pair's first port is the master.
type Bpctl struct {
	Device string `toml:"device"`
}

// ExecStates are command lines (argv, no shell) that select each state.
type ExecStates = Writes[[]string]

// ExecMatch holds a regular expression per state, matched against the
// output of Exec.Get; the first match in the order disconnect, bypass,
// normal wins.
type ExecMatch = Writes[string]

// Exec runs a vendor's command line tool. Arguments may contain {if},
// {if2}, {pair}, and for Arm {ms} and {s} (the timeout).
type Exec struct {
	State       ExecStates `toml:"state"`
	Get         []string   `toml:"get"`
	Match       ExecMatch  `toml:"match"`
	PowerOff    ExecStates `toml:"power_off"`
	PowerUp     ExecStates `toml:"power_up"`
	TimerExpiry ExecStates `toml:"timer_expiry"`
	Arm         []string   `toml:"arm"`
	Kick        []string   `toml:"kick"`
	Disarm      []string   `toml:"disarm"`
	TimerUnit   Duration   `toml:"timer_unit"` // granularity of {s}/{ms}; default 1s
	TimerMax    Duration   `toml:"timer_max"`
	Timeout     Duration   `toml:"timeout"` // per command; default 2s
}

// Sim is the lab's relay: the kernel joins the pair's two interfaces (a tc
// program redirecting each one's ingress out of the other) and keeps the
// controller timer, so both survive bypassd.
type Sim struct {
	TimerUnit Duration `toml:"timer_unit"` // default 100ms
	// CutLinks: in bypass the ports show no link, as on hardware whose
	// relay cuts the NIC off its cables.
	CutLinks bool `toml:"cut_links"`
}

// Limits of the register backends.
const (
	maxRegister    = 0xff   // Super I/O configuration registers and SMBus commands
	maxIOPort      = 0xffff // x86 I/O space
	minI2CAddress  = 0x03
	maxI2CAddress  = 0x77
	maxI2CBus      = 1023
	maxTimerCounts = 0xff // count registers are one byte
	maxExecTimeout = time.Minute
)

var (
	fileNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	templateRE = regexp.MustCompile(`\{[^}]*\}`)
)

// validateBypassPair checks a pair's backend section, its defaults and
// timer. f is the pair's field path ("bypass_pair[1]").
func validateBypassPair(add addFunc, f string, bp *BypassPair) {
	for _, d := range []struct{ key, val string }{
		{"power_off", bp.PowerOff}, {"os_off", bp.OSOff}, {"power_restore", bp.PowerRestore},
		{"power_up", bp.PowerUp}, {"timer_expiry", bp.TimerExpiry},
	} {
		if d.val != "" && !slices.Contains(bypassStates, d.val) {
			add(f+"."+d.key, "unknown state %q, want %s, or \"\" to leave the hardware's default", d.val, quoteList(bypassStates))
		}
	}
	if bp.Timer.Duration < 0 || bp.Timer.Duration > time.Hour {
		add(f+".timer", "%q is out of range, want between 0s (no controller timer) and 1h", bp.Timer)
	}

	// Only the section of the chosen backend may be filled in: settings
	// for another backend are a mistake that would otherwise pass
	// silently.
	sections := map[string]any{
		"superio": bp.SuperIO, "smbus": bp.SMBus, "ioport": bp.IOPort, "registers": bp.Registers,
		"sysfs": bp.Sysfs, "bpctl": bp.Bpctl, "exec": bp.Exec, "sim": bp.Sim, "lanner": bp.Lanner,
	}
	uses := map[string][]string{
		"superio": {"superio", "registers"}, "smbus": {"smbus", "registers"}, "ioport": {"ioport", "registers"},
		"sysfs": {"sysfs"}, "bpctl": {"bpctl"}, "exec": {"exec"}, "sim": {"sim"}, "lanner": {"lanner"},
	}
	for _, name := range []string{"superio", "smbus", "ioport", "registers", "sysfs", "bpctl", "exec", "sim", "lanner"} {
		if !reflect.ValueOf(sections[name]).IsZero() && !slices.Contains(uses[bp.Backend], name) {
			add(f+"."+name, "is set but backend is %q, want no [%s] section", bp.Backend, name)
		}
	}

	hardware := bp.Backend != "sim" && bp.Backend != "none" && slices.Contains(bypassBackends, bp.Backend)
	switch {
	case hardware && !slices.Contains(registerMaps, bp.RegisterMap):
		add(f+".register_map", "%q is not a register map origin, want %s", bp.RegisterMap, quoteList(registerMaps))
	case !hardware && bp.RegisterMap != "":
		add(f+".register_map", "is set but backend %q has no register map, want \"\"", bp.Backend)
	}
	// With no trustworthy origin, asking for the missing writes as well
	// would only repeat the problem.
	missing := bp.RegisterMap == "missing" || !slices.Contains(registerMaps, bp.RegisterMap)

	switch bp.Backend {
	case "superio":
		s := bp.SuperIO
		checkPort(add, f+".superio.index_port", s.IndexPort, true)
		checkPort(add, f+".superio.data_port", s.DataPort, true)
		for i, k := range s.EnterKey {
			checkByte(add, indexPath(f+".superio.enter_key", i), k)
		}
		if len(s.EnterKey) > 4 {
			add(f+".superio.enter_key", "has %d bytes, want at most 4", len(s.EnterKey))
		}
		checkByte(add, f+".superio.exit_key", s.ExitKey)
		checkByte(add, f+".superio.logical_device", s.LogicalDevice)
		checkDevice(add, f+".superio.device", s.Device)
		validateRegisterMap(add, f+".registers", &bp.Registers, maxRegister, true, missing)
	case "smbus":
		s := bp.SMBus
		if s.Bus < 0 || s.Bus > maxI2CBus {
			add(f+".smbus.bus", "%d is out of range, want 0..%d (/dev/i2c-N)", s.Bus, maxI2CBus)
		}
		if s.Address < minI2CAddress || s.Address > maxI2CAddress {
			add(f+".smbus.address", "%#x is out of range, want a 7-bit address 0x03..0x77", s.Address)
		}
		validateRegisterMap(add, f+".registers", &bp.Registers, maxRegister, false, missing)
	case "ioport":
		checkDevice(add, f+".ioport.device", bp.IOPort.Device)
		validateRegisterMap(add, f+".registers", &bp.Registers, maxIOPort, false, missing)
	case "lanner":
		validateLanner(add, f+".lanner", bp.Lanner)
	case "sysfs":
		validateSysfs(add, f+".sysfs", &bp.Sysfs, missing)
	case "bpctl":
		checkDevice(add, f+".bpctl.device", bp.Bpctl.Device)
	case "exec":
		validateExec(add, f+".exec", &bp.Exec, missing)
	case "sim":
		if u := bp.Sim.TimerUnit.Duration; u < 0 || u > time.Minute {
			add(f+".sim.timer_unit", "%q is out of range, want between 1ms and 1m, or 0 for 100ms", bp.Sim.TimerUnit)
		} else if u > 0 && u < time.Millisecond {
			add(f+".sim.timer_unit", "%q is too fine, want at least 1ms", bp.Sim.TimerUnit)
		}
	}
}

func checkPort(add addFunc, path string, v int, zeroOK bool) {
	if (v == 0 && !zeroOK) || v < 0 || v > maxIOPort {
		add(path, "%#x is out of range, want an I/O port 0x0000..0xffff", v)
	}
}

func checkByte(add addFunc, path string, v int) {
	if v < 0 || v > 0xff {
		add(path, "%#x is out of range, want a byte 0x00..0xff", v)
	}
}

func checkDevice(add addFunc, field, dev string) {
	if dev != "" && (path.Clean(dev) != dev || !strings.HasPrefix(dev, "/dev/")) {
		add(field, "%q is not an absolute path under /dev", dev)
	}
}

// validateRegisterMap checks every register write against maxReg (the
// largest register or port address) and one-byte masks and values.
func validateRegisterMap(add addFunc, f string, m *RegisterMap, maxReg int, superio, missing bool) {
	regs := func(path string, list []RegBits) {
		for i, rb := range list {
			p := indexPath(path, i)
			switch {
			case rb.LDN != 0 && !superio:
				add(p+".ldn", "is set but only superio has logical devices, want no ldn")
			case rb.LDN < 0 || rb.LDN > 0xff:
				add(p+".ldn", "%#x is out of range, want a logical device 0x01..0xff", rb.LDN)
			}
			if rb.Reg < 0 || rb.Reg > maxReg {
				add(p+".reg", "%#x is out of range, want 0x00..%#x", rb.Reg, maxReg)
			}
			switch {
			case rb.Mask <= 0 || rb.Mask > 0xff:
				add(p+".mask", "%#x is out of range, want a non-zero byte mask 0x01..0xff", rb.Mask)
			case rb.Value < 0 || rb.Value&^rb.Mask != 0:
				add(p+".value", "%#x sets bits outside mask %#x", rb.Value, rb.Mask)
			}
		}
	}
	states := func(path string, s *RegStates) {
		s.Each(func(state string, list *[]RegBits) { regs(path+"."+state, *list) })
	}
	regs(f+".init", m.Init)
	states(f+".state", &m.State)
	for _, e := range bypassEvents {
		states(f+"."+e, m.Event(e))
	}
	t := &m.Timer
	regs(f+".timer.arm", t.Arm)
	regs(f+".timer.disarm", t.Disarm)
	regs(f+".timer.kick", t.Kick)
	if t.Unit.Duration != 0 || t.Max != 0 || len(t.Arm)+len(t.Disarm)+len(t.Kick) > 0 {
		if t.Reg < 0 || t.Reg > maxReg {
			add(f+".timer.reg", "%#x is out of range, want 0x00..%#x", t.Reg, maxReg)
		}
		if t.Unit.Duration <= 0 {
			add(f+".timer.unit", "%q is not positive, want the time of one count such as \"1s\"", t.Unit)
		}
		if t.Max < 1 || t.Max > maxTimerCounts {
			add(f+".timer.max", "%d is out of range, want 1..%d counts", t.Max, maxTimerCounts)
		}
	}
	if missing {
		return
	}
	if len(m.State.Bypass) == 0 {
		add(f+".state.bypass", "no register writes, want the bits that put the relay in bypass (or register_map = \"missing\")")
	}
	if len(m.State.Normal) == 0 {
		add(f+".state.normal", "no register writes, want the bits that put the relay in normal (or register_map = \"missing\")")
	}
}

func validateSysfs(add addFunc, f string, s *Sysfs, missing bool) {
	dir := templateRE.ReplaceAllStringFunc(s.Dir, func(t string) string {
		if t == "{if}" || t == "{if2}" {
			return "x"
		}
		add(f+".dir", "unknown placeholder %s in %q, want {if} or {if2}", t, s.Dir)
		return "x"
	})
	if s.Dir == "" && !missing {
		add(f+".dir", "missing, want the driver's directory such as \"/proc/net/bypass/bypass_{if}\"")
	} else if s.Dir != "" && (!path.IsAbs(dir) || path.Clean(dir) != dir) {
		add(f+".dir", "%q is not a clean absolute path", s.Dir)
	}
	files := func(p string, list []FileWrite) {
		for i, w := range list {
			if !fileNameRE.MatchString(w.File) {
				add(indexPath(p, i)+".file", "%q is not a file name in the driver's directory", w.File)
			}
			if w.Value == "" || strings.ContainsAny(w.Value, "\n\x00") {
				add(indexPath(p, i)+".value", "%q is not a one-line value", w.Value)
			}
		}
	}
	states := func(p string, st *FileStates) {
		st.Each(func(state string, list *[]FileWrite) { files(p+"."+state, *list) })
	}
	states(f+".state", &s.State)
	for _, e := range bypassEvents {
		states(f+"."+e, s.Event(e))
	}
	if t := &s.Timer; t.File != "" || t.Left != "" || len(t.Kick) > 0 {
		for _, fl := range []struct{ key, name string }{{"file", t.File}, {"left", t.Left}} {
			if fl.name != "" && !fileNameRE.MatchString(fl.name) {
				add(f+".timer."+fl.key, "%q is not a file name in the driver's directory", fl.name)
			}
		}
		if t.File == "" {
			add(f+".timer.file", "missing, want the file that takes the timeout")
		}
		if t.Unit.Duration <= 0 {
			add(f+".timer.unit", "%q is not positive, want the driver's unit such as \"1ms\"", t.Unit)
		}
		if t.Max < 1 {
			add(f+".timer.max", "%d is out of range, want the largest count the driver takes", t.Max)
		}
		files(f+".timer.kick", t.Kick)
	}
	if !missing && (len(s.State.Bypass) == 0 || len(s.State.Normal) == 0) {
		add(f+".state", "want file writes for both normal and bypass (or register_map = \"missing\")")
	}
}

func validateExec(add addFunc, f string, e *Exec, missing bool) {
	argv := func(p string, args []string, extra ...string) {
		if len(args) == 0 {
			return
		}
		if !path.IsAbs(args[0]) {
			add(p+"[0]", "%q is not an absolute path, want the tool's full path (there is no shell or $PATH on the appliance)", args[0])
		}
		allowed := append([]string{"{if}", "{if2}", "{pair}"}, extra...)
		for i, a := range args {
			for _, t := range templateRE.FindAllString(a, -1) {
				if !slices.Contains(allowed, t) {
					add(indexPath(p, i), "unknown placeholder %s, want %s", t, strings.Join(allowed, ", "))
				}
			}
		}
	}
	states := func(p string, st *ExecStates) {
		st.Each(func(state string, args *[]string) { argv(p+"."+state, *args) })
	}
	states(f+".state", &e.State)
	for _, ev := range bypassEvents {
		states(f+"."+ev, e.Event(ev))
	}
	argv(f+".get", e.Get)
	argv(f+".arm", e.Arm, "{ms}", "{s}")
	argv(f+".kick", e.Kick)
	argv(f+".disarm", e.Disarm)
	e.Match.Each(func(state string, re *string) {
		if _, err := regexp.Compile(*re); err != nil {
			add(f+".match."+state, "%q is not a regular expression: %v", *re, err)
		}
	})
	if d := e.Timeout.Duration; d < 0 || d > maxExecTimeout {
		add(f+".timeout", "%q is out of range, want up to 1m (0 for 2s)", e.Timeout)
	}
	if e.TimerUnit.Duration < 0 {
		add(f+".timer_unit", "%q is negative", e.TimerUnit)
	}
	if len(e.Arm) > 0 && e.TimerMax.Duration <= 0 {
		add(f+".timer_max", "%q is not positive, want the longest timeout the tool takes", e.TimerMax)
	}
	if missing {
		return
	}
	if len(e.State.Bypass) == 0 || len(e.State.Normal) == 0 {
		add(f+".state", "want commands for both normal and bypass (or register_map = \"missing\")")
	}
	if len(e.Get) > 0 && (e.Match.Normal == "" || e.Match.Bypass == "") {
		add(f+".match", "want patterns for at least normal and bypass to read the state back from get")
	}
}

// DecodeProfile is ParseProfile for a caller that must still act safely on
// a profile that fails validation: it returns what decoded (nil when the
// text is not even TOML of the right shape) together with the
// *ValidationError. bypassd uses it to put the relays it can still trust
// into bypass while refusing the profile. Anything else must use
// ParseProfile or LookupProfile.
func DecodeProfile(filename string, data []byte) (*Profile, error) {
	src := &source{file: filename, data: data}
	p := &Profile{}
	errs, decoded := src.decodeStrict(p)
	if !decoded {
		return nil, &ValidationError{Errors: errs}
	}
	errs = append(errs, p.validate(src)...)
	if len(errs) > 0 {
		sortByLine(errs)
		return p, &ValidationError{Errors: errs}
	}
	return p, nil
}

// validateLanner checks that the board knows the slot and the pair is one
// a module can have.
func validateLanner(add addFunc, f string, l Lanner) {
	if _, _, err := lanner.Route(l.Board, l.Slot); err != nil {
		field := f + ".board"
		if slices.Contains(lanner.Boards(), l.Board) {
			field = f + ".slot"
		}
		add(field, "%v", err)
	}
	if l.Pair < 1 || l.Pair > 8 {
		add(f+".pair", "%d is out of range, want 1..8 (a module has up to 8 pairs)", l.Pair)
	}
	if l.Bus != nil && (*l.Bus < 0 || *l.Bus > maxI2CBus) {
		add(f+".bus", "%d is out of range, want 0..%d (/dev/i2c-N)", *l.Bus, maxI2CBus)
	}
}
