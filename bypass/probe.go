package bypass

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/bypass/ixgbe"
	"github.com/ncpos/ncpos/bypass/sio"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/internal/kmsg"
	"github.com/ncpos/ncpos/lanner"
)

// silicomVendor is Silicom's PCI vendor ID; its bypass NICs also carry it
// as subsystem vendor on Intel controllers.
const silicomVendor = 0x1374

// ProbeEnv is where the probe looks: the box's sysfs, SMBus adapters and
// I/O ports, or a test's emulations.
type ProbeEnv struct {
	Sys     string                          // "/sys"
	OpenBus func(bus int) (smbusBus, error) // /dev/i2c-N
	Ports   portIO                          // /dev/port; nil: Super I/O not probed
	Now     func() time.Time
}

// DefaultProbeEnv is the real box. The caller closes what it returns.
func DefaultProbeEnv() (ProbeEnv, func()) {
	env := ProbeEnv{Sys: "/sys", Now: time.Now,
		OpenBus: func(bus int) (smbusBus, error) { return openAdapter(bus, false) }}
	f, err := openPort("")
	if err != nil {
		return env, func() {}
	}
	env.Ports = f
	return env, func() { f.Close() }
}

// probeAddresses are where the probe reads on an SMBus: Lanner's module
// addresses (0x30-0x38) and the I2C switches (0x70-0x77).
var probeAddresses = func() []byte {
	var a []byte
	for i := byte(0x30); i <= 0x38; i++ {
		a = append(a, i)
	}
	for i := byte(0x70); i <= 0x77; i++ {
		a = append(a, i)
	}
	return a
}()

// Probe identifies the bypass and watchdog hardware of the box without
// writing to it: PCI functions by their IDs in sysfs, Super I/O chips by
// their ID registers (the entry key and register index go to the index
// port, no configuration register is written), and SMBus devices by a
// receive-byte read at the addresses bypass controllers and their
// switches use (never a command: DDR3/DDR4 SPD EEPROMs take writes to
// 0x30-0x37 as write-protect and page commands). It is meant to run once
// at boot, before bypassd drives anything through the same ports.
func Probe(env ProbeEnv) bypassapi.HardwareProbe {
	r := bypassapi.HardwareProbe{Time: env.Now()}
	r.NICs = probeNICs(env.Sys, &r.Errors)
	r.Watchdogs = probeWatchdogs(env.Sys)
	// A Super I/O whose watchdog a kernel driver holds is not probed: the
	// driver takes the configuration ports with its own lock, which
	// /dev/port does not, and a probe between its index and data writes
	// would send its value to another register.
	for _, w := range r.Watchdogs {
		if f := sio.FamilyOfDriver(w.Identity); f != "" {
			r.SuperIO = append(r.SuperIO, bypassapi.ProbedSuperIO{Chip: w.Identity, Family: f, Driver: "watchdog " + w.Device})
		}
	}
	if env.Ports != nil && len(r.SuperIO) == 0 {
		r.SuperIO = probeSuperIO(env.Ports, &r.Errors)
	}
	r.SMBus = probeSMBus(env, &r.Errors)
	r.Fits = fits(&r)
	return r
}

func readHex(path string) (uint16, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
	return uint16(v), err
}

func probeNICs(sys string, errs *[]string) []bypassapi.ProbedNIC {
	dir := filepath.Join(sys, "bus", "pci", "devices")
	entries, err := os.ReadDir(dir)
	if err != nil {
		*errs = append(*errs, "listing PCI devices: "+err.Error())
		return nil
	}
	var out []bypassapi.ProbedNIC
	for _, e := range entries {
		d := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(filepath.Join(d, "class"))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), "0x02") { // network controllers
			continue
		}
		vendor, err1 := readHex(filepath.Join(d, "vendor"))
		device, err2 := readHex(filepath.Join(d, "device"))
		if err1 != nil || err2 != nil {
			*errs = append(*errs, fmt.Sprintf("PCI %s: unreadable IDs", e.Name()))
			continue
		}
		sv, _ := readHex(filepath.Join(d, "subsystem_vendor"))
		sd, _ := readHex(filepath.Join(d, "subsystem_device"))
		n := bypassapi.ProbedNIC{PCI: e.Name(), ID: fmt.Sprintf("%04x:%04x", vendor, device), Subsystem: fmt.Sprintf("%04x:%04x", sv, sd)}
		if l, err := os.Readlink(filepath.Join(d, "driver")); err == nil {
			n.Driver = filepath.Base(l)
		}
		if ifs, err := os.ReadDir(filepath.Join(d, "net")); err == nil {
			for _, i := range ifs {
				n.Interfaces = append(n.Interfaces, i.Name())
			}
		}
		_, pinsErr := ixgbe.PinsOf(device)
		switch {
		case vendor == ixgbe.VendorIntel && pinsErr == nil:
			n.Bypass = "Intel 82599 bypass adapter"
			if device == ixgbe.DeviceX540BP {
				n.Bypass = "Intel X540 bypass adapter"
			}
			n.Support = bypassapi.SupportDrivable
			n.Note = "backend ixgbe"
			if !strings.HasSuffix(n.PCI, ".0") {
				n.Note = "backend ixgbe, through function 0 of the adapter"
			}
		case vendor == silicomVendor || sv == silicomVendor:
			n.Bypass = "Silicom NIC (bypass models are driven by Silicom's bpctl_mod)"
			n.Support = bypassapi.SupportNone
			n.Note = "ncpos's kernel has no modules: Silicom bypass is not supported"
		}
		out = append(out, n)
	}
	return out
}

func probeSuperIO(io portIO, errs *[]string) []bypassapi.ProbedSuperIO {
	var out []bypassapi.ProbedSuperIO
	for _, port := range sio.Ports {
		var err error
		out1 := func(v byte) {
			if err == nil {
				err = outb(io, int(port), v)
			}
		}
		read := func(reg byte) byte {
			out1(reg)
			if err != nil {
				return sio.NoChip
			}
			var v byte
			v, err = inb(io, int(port)+1)
			return v
		}
		out1(sio.EnterKey)
		out1(sio.EnterKey)
		hi, lo := read(sio.RegDevID), read(sio.RegDevID+1)
		man := uint16(read(sio.RegManID))<<8 | uint16(read(sio.RegManID+1))
		out1(sio.ExitKey)
		switch {
		case err != nil:
			*errs = append(*errs, fmt.Sprintf("Super I/O at %#x: %v", port, err))
		case hi != sio.NoChip:
			id := uint16(hi)<<8 | uint16(lo)
			out = append(out, bypassapi.ProbedSuperIO{Port: port, ID: id, Chip: sio.Name(id, man), Family: sio.Family(id, man)})
		}
	}
	return out
}

func probeSMBus(env ProbeEnv, errs *[]string) []bypassapi.ProbedSMBus {
	dir := filepath.Join(env.Sys, "bus", "i2c", "devices")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // no I2C at all
	}
	var out []bypassapi.ProbedSMBus
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "i2c-")
		bus, err := strconv.Atoi(n)
		if !ok || err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, e.Name(), "name"))
		name := strings.TrimSpace(string(b))
		if !strings.HasPrefix(name, "SMBus") { // PCH and chipset SMBus controllers, not display or sensor buses
			continue
		}
		a, err := env.OpenBus(bus)
		if err != nil {
			*errs = append(*errs, fmt.Sprintf("SMBus i2c-%d: %v", bus, err))
			continue
		}
		sb := bypassapi.ProbedSMBus{Bus: bus, Name: name}
		for _, addr := range probeAddresses {
			v, err := a.ReceiveByte(addr)
			if err != nil {
				continue
			}
			sb.Answers = append(sb.Answers, bypassapi.ProbedAddress{Address: addr, Value: v, Maybe: maybeAt(addr, v)})
		}
		a.Close()
		out = append(out, sb)
	}
	return out
}

func maybeAt(addr, v byte) string {
	switch {
	case addr == lanner.OnBoardAddress:
		return "a Lanner Gen 3 on-board bypass controller, or a memory module's SPD page address"
	case addr >= 0x30 && addr <= 0x38:
		return "a Lanner Gen 3 bypass module behind a selected switch channel, or a memory module's SPD write-protect address"
	case slices.Contains(lanner.SwitchAddresses(), addr):
		return fmt.Sprintf("an I2C switch (control register %#02x), as Lanner's boards use to reach their bypass modules", v)
	}
	return fmt.Sprintf("an I2C switch (control register %#02x)", v)
}

func probeWatchdogs(sys string) []bypassapi.ProbedWatchdog {
	dir := filepath.Join(sys, "class", "watchdog")
	entries, _ := os.ReadDir(dir)
	var out []bypassapi.ProbedWatchdog
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name(), "identity"))
		out = append(out, bypassapi.ProbedWatchdog{Device: "/dev/" + e.Name(), Identity: strings.TrimSpace(string(b))})
	}
	return out
}

// fits checks every bypass pair of the compiled-in profiles whose
// hardware the probe can recognise against what it found.
func fits(r *bypassapi.HardwareProbe) []bypassapi.ProfileFit {
	answered := func(bus bypassapi.ProbedSMBus, addr byte) bool {
		return slices.ContainsFunc(bus.Answers, func(a bypassapi.ProbedAddress) bool { return a.Address == addr })
	}
	var out []bypassapi.ProfileFit
	for _, name := range config.ProfileNames() {
		p, err := config.LookupProfile(name)
		if err != nil {
			continue
		}
		for _, bp := range p.BypassPairs {
			f := bypassapi.ProfileFit{Profile: name, Pair: bp.Name, Backend: bp.Backend, Support: bypassapi.SupportOperatorMap}
			if bp.RegisterMap == "vendor" {
				f.Support = bypassapi.SupportDrivable
			}
			switch bp.Backend {
			case "lanner":
				hops, addr, err := lanner.Route(bp.Lanner.Board, bp.Lanner.Slot)
				if err != nil {
					continue
				}
				want := addr
				what := fmt.Sprintf("its on-board controller at %#02x", addr)
				if len(hops) > 0 {
					want = hops[0].Switch
					what = fmt.Sprintf("its I2C switch at %#02x", want)
				}
				adapter := bp.Lanner.WithDefaults().Adapter
				i := slices.IndexFunc(r.SMBus, func(b bypassapi.ProbedSMBus) bool { return strings.HasPrefix(b.Name, adapter) })
				switch {
				case i < 0:
					f.Why = fmt.Sprintf("no SMBus adapter named %q", adapter)
				case !answered(r.SMBus[i], want):
					f.Why = fmt.Sprintf("nothing answers at %#02x on i2c-%d, where board %s has %s", want, r.SMBus[i].Bus, bp.Lanner.Board, what)
				default:
					f.Found = true
					f.Why = fmt.Sprintf("i2c-%d answers at %#02x, where board %s has %s", r.SMBus[i].Bus, want, bp.Lanner.Board, what)
				}
			case "ixgbe":
				i := slices.IndexFunc(r.NICs, func(n bypassapi.ProbedNIC) bool { return n.Support == bypassapi.SupportDrivable })
				if f.Found = i >= 0; f.Found {
					f.Why = fmt.Sprintf("%s at %s", r.NICs[i].Bypass, r.NICs[i].PCI)
				} else {
					f.Why = "no Intel bypass adapter (8086:155d, 8086:155c)"
				}
			case "superio":
				// ncpos's Super I/O maps are all for Winbond/Nuvoton GPIO.
				port := uint16(bp.SuperIO.WithDefaults().IndexPort)
				i := slices.IndexFunc(r.SuperIO, func(s bypassapi.ProbedSuperIO) bool { return s.Port == port || s.Port == 0 })
				switch {
				case i < 0:
					f.Why = fmt.Sprintf("no Super I/O answers at %#x", port)
				case r.SuperIO[i].Family != "winbond":
					chip := cmp.Or(r.SuperIO[i].Chip, fmt.Sprintf("unknown chip %#04x", r.SuperIO[i].ID))
					f.Why = fmt.Sprintf("%s, not the Winbond/Nuvoton chip the profile's map is for", chip)
				case r.SuperIO[i].Port == 0:
					f.Found = true
					f.Why = fmt.Sprintf("%s (a kernel driver has it: not probed)", r.SuperIO[i].Chip)
				default:
					f.Found = true
					f.Why = fmt.Sprintf("%s at %#x", r.SuperIO[i].Chip, port)
				}
				if bp.RegisterMap == "missing" {
					f.Why += "; the profile's register map is not public: fill it in (bypass/PROFILES.md)"
				}
			default:
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

// probeSummary is the probe in a few lines for the boot log.
func probeSummary(r bypassapi.HardwareProbe) []string {
	var lines []string
	for _, n := range r.NICs {
		if n.Bypass != "" {
			lines = append(lines, fmt.Sprintf("probe: NIC %s %s: %s (%s; %s)", n.PCI, n.ID, n.Bypass, n.Support, n.Note))
		}
	}
	for _, s := range r.SuperIO {
		if s.Port == 0 {
			lines = append(lines, fmt.Sprintf("probe: Super I/O %s, held by the kernel's %s: not probed", s.Chip, s.Driver))
			continue
		}
		lines = append(lines, fmt.Sprintf("probe: Super I/O at %#x: id %#04x %s", s.Port, s.ID, s.Chip))
	}
	for _, b := range r.SMBus {
		var as []string
		for _, a := range b.Answers {
			as = append(as, fmt.Sprintf("%#02x", a.Address))
		}
		lines = append(lines, fmt.Sprintf("probe: SMBus i2c-%d %q answers at [%s]", b.Bus, b.Name, strings.Join(as, " ")))
	}
	for _, w := range r.Watchdogs {
		lines = append(lines, fmt.Sprintf("probe: watchdog %s: %s", w.Device, w.Identity))
	}
	for _, f := range r.Fits {
		if f.Found {
			lines = append(lines, fmt.Sprintf("probe: profile %s %s (%s, %s) fits: %s", f.Profile, f.Pair, f.Backend, f.Support, f.Why))
		}
	}
	for _, e := range r.Errors {
		lines = append(lines, "probe: "+e)
	}
	if len(lines) == 0 {
		lines = append(lines, "probe: no bypass or watchdog hardware recognised")
	}
	return lines
}

// ProbeOnce runs the probe the first time bypassd starts in a boot and
// keeps it in runDir (a bypassd restarted later reads it back rather than
// probing again while its own backends hold the hardware). The summary
// goes to the log and to the kernel's log, which is the serial console's
// boot log.
func ProbeOnce(runDir string, env ProbeEnv, kmsgPath string) (bypassapi.HardwareProbe, error) {
	path := filepath.Join(runDir, bypassapi.HardwareFile)
	var r bypassapi.HardwareProbe
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &r) == nil {
		return r, nil
	}
	r = Probe(env)
	lines := probeSummary(r)
	for _, l := range lines {
		log.Print(l)
	}
	if kmsgPath != "" {
		prefixed := make([]string, len(lines))
		for i, l := range lines {
			prefixed[i] = "ncpos: " + l
		}
		if err := kmsg.Write(kmsgPath, kmsg.Info, prefixed...); err != nil {
			log.Printf("probe: %v", err)
		}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return r, err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return r, fmt.Errorf("keeping the probe: %w", err)
	}
	if err := durable.WriteFile(path, b, 0o644); err != nil {
		return r, fmt.Errorf("keeping the probe: %w", err)
	}
	return r, nil
}
