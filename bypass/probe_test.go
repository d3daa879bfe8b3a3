package bypass

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
)

// ioBus routes I/O port accesses to the device at each port; a port with
// nothing reads 0xff, as on the ISA bus.
type ioBus struct {
	devs map[int64]portIO
	log  []string
}

func (b *ioBus) WriteAt(p []byte, off int64) (int, error) {
	b.log = append(b.log, fmt.Sprintf("out %#x %#02x", off, p[0]))
	if d, ok := b.devs[off]; ok {
		return d.WriteAt(p, off)
	}
	return 1, nil
}

func (b *ioBus) ReadAt(p []byte, off int64) (int, error) {
	if d, ok := b.devs[off]; ok {
		return d.ReadAt(p, off)
	}
	p[0] = 0xff
	return 1, nil
}

// fakeSys is a /sys with PCI functions, I2C adapters and watchdogs.
type fakeSys struct {
	t    *testing.T
	root string
}

func (s fakeSys) write(path, content string) {
	s.t.Helper()
	p := filepath.Join(s.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s fakeSys) pci(addr, class, vendor, device, subVendor, driver string, ifs ...string) {
	d := "bus/pci/devices/" + addr + "/"
	s.write(d+"class", class)
	s.write(d+"vendor", vendor)
	s.write(d+"device", device)
	s.write(d+"subsystem_vendor", subVendor)
	s.write(d+"subsystem_device", "0x0001")
	for _, i := range ifs {
		s.write(d+"net/"+i+"/ifindex", "1")
	}
	if driver != "" {
		os.Symlink("../../../bus/pci/drivers/"+driver, filepath.Join(s.root, d+"driver"))
	}
}

func TestProbe(t *testing.T) {
	sys := fakeSys{t, t.TempDir()}
	sys.pci("0000:03:00.0", "0x020000", "0x8086", "0x155d", "0x8086", "ixgbe", "eth1")
	sys.pci("0000:03:00.1", "0x020000", "0x8086", "0x155d", "0x8086", "ixgbe", "eth2")
	sys.pci("0000:05:00.0", "0x020000", "0x8086", "0x10d3", "0x1374", "e1000e", "eth3")
	sys.pci("0000:06:00.0", "0x020000", "0x8086", "0x1521", "0x8086", "igb", "eth0")
	sys.pci("0000:00:1f.3", "0x0c0500", "0x8086", "0x1c22", "0x8086", "i801_smbus")
	sys.write("bus/i2c/devices/i2c-0/name", "SMBus I801 adapter at f000")
	sys.write("bus/i2c/devices/i2c-1/name", "i915 gmbus dpc")
	sys.write("class/watchdog/watchdog0/identity", "iTCO_wdt")

	// An MB-8865: the PCA9545 at 0x73 with a module in bay 1 (its
	// channel not selected), and a W83627HF at 0x2e.
	mcu := newLannerMCU()
	bus := mb887x(map[int]*lannerMCU{1: mcu})
	w := newW83627()
	w.global[0x20], w.global[0x21] = 0x52, 0x41
	ports := &ioBus{devs: map[int64]portIO{0x2e: w, 0x2f: w}}
	opened := map[int]bool{}
	env := ProbeEnv{Sys: sys.root, Ports: ports, Now: func() time.Time { return time.Unix(1e9, 0) },
		OpenBus: func(n int) (smbusBus, error) {
			opened[n] = true
			if n != 0 {
				return nil, fmt.Errorf("no /dev/i2c-%d", n)
			}
			return bus, nil
		}}
	r := Probe(env)

	// NICs: the bypass adapter's two functions, Silicom's, the others plain.
	byPCI := map[string]bypassapi.ProbedNIC{}
	for _, n := range r.NICs {
		byPCI[n.PCI] = n
	}
	if len(r.NICs) != 4 || byPCI["0000:03:00.0"].Support != bypassapi.SupportDrivable || byPCI["0000:03:00.0"].Driver != "ixgbe" ||
		!slices.Equal(byPCI["0000:03:00.0"].Interfaces, []string{"eth1"}) ||
		!strings.Contains(byPCI["0000:03:00.1"].Note, "through function 0") ||
		byPCI["0000:05:00.0"].Support != bypassapi.SupportNone || byPCI["0000:06:00.0"].Bypass != "" {
		t.Errorf("NICs %+v", r.NICs)
	}
	if len(r.SuperIO) != 1 || r.SuperIO[0].Port != 0x2e || r.SuperIO[0].ID != 0x5241 || r.SuperIO[0].Chip != "Winbond W83627HF" {
		t.Errorf("Super I/O %+v", r.SuperIO)
	}
	// Only the SMBus adapter was opened; only the switch answers (the
	// module sits behind an unselected channel).
	if !opened[0] || opened[1] || len(r.SMBus) != 1 || len(r.SMBus[0].Answers) != 1 || r.SMBus[0].Answers[0].Address != 0x73 {
		t.Errorf("SMBus %+v (opened %v)", r.SMBus, opened)
	}
	if len(r.Watchdogs) != 1 || r.Watchdogs[0].Identity != "iTCO_wdt" {
		t.Errorf("watchdogs %+v", r.Watchdogs)
	}
	// Nothing written: SMBus saw only reads, the Super I/O only its keys
	// and register indexes.
	for _, l := range bus.take() {
		if !strings.HasPrefix(l, "receive ") {
			t.Errorf("SMBus: %s", l)
		}
	}
	for _, l := range ports.log {
		if !strings.HasPrefix(l, "out 0x2e ") && !strings.HasPrefix(l, "out 0x4e ") {
			t.Errorf("I/O: %s", l)
		}
	}
	if len(w.violations) > 0 {
		t.Errorf("Super I/O violations %q", w.violations)
	}

	fit := map[string]bypassapi.ProfileFit{}
	for _, f := range r.Fits {
		fit[f.Profile+"/"+f.Pair] = f
	}
	if f := fit["fw-8865/pair1"]; !f.Found || f.Support != bypassapi.SupportDrivable || !strings.Contains(f.Why, "i2c-0 answers at 0x73") {
		t.Errorf("fw-8865 pair1: %+v", f)
	}
	if f := fit["iec-516p/pair1"]; !f.Found || f.Support != bypassapi.SupportOperatorMap || !strings.Contains(f.Why, "Winbond W83627HF at 0x2e; the profile's register map is not public") {
		t.Errorf("iec-516p pair1: %+v", f)
	}
	if f := fit["fw-7565/pair2"]; !f.Found || f.Support != bypassapi.SupportDrivable || f.Why != "Winbond W83627HF at 0x2e" {
		t.Errorf("fw-7565 pair2: %+v", f)
	}
	if _, ok := fit["qemu/pair1"]; ok {
		t.Error("the sim relay was matched")
	}
	sum := strings.Join(probeSummary(r), "\n")
	for _, want := range []string{"NIC 0000:03:00.0 8086:155d: Intel 82599 bypass adapter (drivable; backend ixgbe)",
		"Super I/O at 0x2e: id 0x5241 Winbond W83627HF", `SMBus i2c-0 "SMBus I801 adapter at f000" answers at [0x73]`,
		"watchdog /dev/watchdog0: iTCO_wdt", "profile fw-8865 pair1 (lanner, drivable) fits"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}

	// A kernel driver holds the Super I/O's watchdog: no port is touched,
	// the chip is taken from the driver.
	sys.write("class/watchdog/watchdog1/identity", "W83627HF Watchdog")
	ports.log = nil
	r = Probe(env)
	if len(ports.log) != 0 || len(r.SuperIO) != 1 || r.SuperIO[0].Port != 0 || r.SuperIO[0].Family != "winbond" {
		t.Errorf("with w83627hf_wdt bound: I/O %q, Super I/O %+v", ports.log, r.SuperIO)
	}
	if f := findFit(r, "fw-7565", "pair1"); !f.Found || !strings.Contains(f.Why, "a kernel driver has it: not probed") {
		t.Errorf("fw-7565 with the kernel's driver: %+v", f)
	}
	os.RemoveAll(filepath.Join(sys.root, "class/watchdog/watchdog1"))

	// A Fintek chip is no match for the Winbond map.
	w.global[0x20], w.global[0x21], w.global[0x23], w.global[0x24] = 0x08, 0x14, 0x19, 0x34
	r = Probe(env)
	if f := findFit(r, "fw-7565", "pair1"); f.Found || !strings.Contains(f.Why, "Fintek F71869, not the Winbond/Nuvoton chip") {
		t.Errorf("fw-7565 on a Fintek: %+v", f)
	}

	// An empty box: no hardware, no fits, and it says so.
	empty := Probe(ProbeEnv{Sys: t.TempDir(), Now: time.Now, OpenBus: env.OpenBus})
	if len(empty.NICs)+len(empty.SMBus)+len(empty.SuperIO) != 0 || slices.ContainsFunc(empty.Fits, func(f bypassapi.ProfileFit) bool { return f.Found }) ||
		len(empty.Errors) != 1 || !strings.Contains(empty.Errors[0], "listing PCI devices") {
		t.Errorf("empty box: %+v", empty)
	}
}

func TestProbeOnce(t *testing.T) {
	sys := fakeSys{t, t.TempDir()}
	sys.write("class/watchdog/watchdog0/identity", "iTCO_wdt")
	run := t.TempDir()
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	os.WriteFile(kmsg, nil, 0o644)
	env := ProbeEnv{Sys: sys.root, Now: time.Now, OpenBus: func(int) (smbusBus, error) { return nil, fmt.Errorf("none") }}
	r, err := ProbeOnce(run, env, kmsg)
	if err != nil || len(r.Watchdogs) != 1 {
		t.Fatalf("%+v, %v", r, err)
	}
	if b, _ := os.ReadFile(kmsg); !strings.Contains(string(b), "<6>ncpos: probe: watchdog /dev/watchdog0: iTCO_wdt\n") {
		t.Errorf("kernel log: %q", b)
	}
	// A restarted bypassd reads the boot's probe back: it does not probe
	// again while its backends hold the hardware.
	sys.write("class/watchdog/watchdog1/identity", "i6300ESB timer")
	os.WriteFile(kmsg, nil, 0o644)
	r, err = ProbeOnce(run, env, kmsg)
	if err != nil || len(r.Watchdogs) != 1 {
		t.Errorf("second start: %+v, %v", r, err)
	}
	if b, _ := os.ReadFile(kmsg); len(b) != 0 {
		t.Errorf("second start logged %q", b)
	}
}

func findFit(r bypassapi.HardwareProbe, profile, pair string) bypassapi.ProfileFit {
	for _, f := range r.Fits {
		if f.Profile == profile && f.Pair == pair {
			return f
		}
	}
	return bypassapi.ProfileFit{}
}
