package bypass

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/bypass/ixgbe"
	"github.com/ncpos/ncpos/config"
)

// ixgbeRig is an emulated adapter whose clock the backend's waits move.
type ixgbeRig struct {
	c  *clock
	fw *ixgbeFirmware
}

func newIxgbeRig(device uint16) *ixgbeRig {
	c := newClock()
	return &ixgbeRig{c: c, fw: newIxgbeFirmware(device, c.now())}
}

func (r *ixgbeRig) sleep(d time.Duration) {
	r.c.advance(d)
	r.fw.advance(d)
}

func TestIxgbeBackend(t *testing.T) {
	for _, dev := range []uint16{ixgbe.Device82599BP, ixgbe.DeviceX540BP} {
		r := newIxgbeRig(dev)
		b, err := newIxgbe(r.fw, dev, "0000:03:00.0 (eth1)", r.sleep)
		if err != nil {
			t.Fatalf("%04x: %v", dev, err)
		}
		c := b.Caps()
		if !slices.Equal(c.States, []bypassapi.State{bypassapi.Normal, bypassapi.Bypass, bypassapi.Disconnect}) || len(c.Events) != 5 ||
			!c.CanDefault(bypassapi.OSOff, bypassapi.Disconnect) || c.Timer == nil || c.Timer.TimeLeft || b.version != 3 || c.ReadBackOf != bypassapi.ReadsController {
			t.Fatalf("%04x: caps %s, version %d", dev, c, b.version)
		}
		for _, s := range []bypassapi.State{bypassapi.Normal, bypassapi.Disconnect, bypassapi.Bypass, bypassapi.Normal} {
			start := r.c.now()
			if err := b.Set(s); err != nil {
				t.Fatalf("%04x set %s: %v", dev, s, err)
			}
			// Five exchanges of 134 ms (the write, two read-backs while
			// the emulator's EEPROM takes 150 ms, auto); the relay moves
			// once the first is stored.
			if took, moved := r.c.now().Sub(start), r.fw.stateAt.Sub(start); took > 700*time.Millisecond || moved > 300*time.Millisecond {
				t.Errorf("%04x: setting %s took %v, the relay moved after %v", dev, s, took, moved)
			}
			if got, err := b.Get(); err != nil || got != s {
				t.Fatalf("%04x set %s: reads %s, %v", dev, s, got, err)
			}
		}
		// After a state command the firmware is back in auto: it obeys
		// events again.
		if r.fw.esdp&ixgbe.Dir(r.fw.pins.SDO) != 0 || r.fw.stateCmds != 4 {
			t.Errorf("%04x: %d state commands", dev, r.fw.stateCmds)
		}

		// Defaults: written only when they differ; each write is read
		// back through the EEPROM's busy time.
		writes := r.fw.eepromWrite
		want := map[bypassapi.Event]bypassapi.State{bypassapi.PowerOff: bypassapi.Bypass, bypassapi.OSOff: bypassapi.Bypass, bypassapi.PowerRestore: bypassapi.Bypass, bypassapi.PowerUp: bypassapi.Bypass, bypassapi.TimerExpiry: bypassapi.Bypass}
		for e, s := range want {
			if err := b.SetDefault(e, s); err != nil {
				t.Fatalf("%04x %s default: %v", dev, e, err)
			}
		}
		// os_off (nop) and power_up (normal) changed; the others were bypass.
		if r.fw.eepromWrite-writes != 2 {
			t.Errorf("%04x: %d EEPROM writes for the defaults, want 2", dev, r.fw.eepromWrite-writes)
		}
		for e, s := range want {
			if got, err := b.Default(e); err != nil || got != s {
				t.Errorf("%04x %s default reads %s, %v", dev, e, got, err)
			}
		}
		writes = r.fw.eepromWrite
		for e, s := range want {
			if err := b.SetDefault(e, s); err != nil {
				t.Fatal(err)
			}
		}
		if r.fw.eepromWrite != writes {
			t.Errorf("%04x: the same defaults again wrote the EEPROM", dev)
		}

		// The watchdog: 5s asked is 8s on the firmware; petted, it
		// holds; not petted, the firmware bypasses by itself.
		if d, err := b.Arm(5 * time.Second); err != nil || d != 8*time.Second {
			t.Fatalf("%04x arm: %v, %v", dev, d, err)
		}
		if d, err := b.Arm(5 * time.Second); err != nil || d != 8*time.Second || r.fw.eepromWrite != writes+1 {
			t.Errorf("%04x: arming again: %v, %v, %d EEPROM writes, want %d", dev, d, err, r.fw.eepromWrite, writes+1)
		}
		for range 6 {
			r.sleep(3 * time.Second)
			if err := b.Kick(); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ := b.Get(); st != bypassapi.Normal {
			t.Fatalf("%04x: petted every 3s, reads %s", dev, st)
		}
		r.sleep(9 * time.Second)
		if st, _ := b.Get(); st != bypassapi.Bypass || !r.fw.expired {
			t.Fatalf("%04x: not petted for 9s: reads %s", dev, st)
		}
		if err := b.Set(bypassapi.Normal); err != nil {
			t.Fatal(err)
		}
		if err := b.Kick(); err != nil {
			t.Fatal(err)
		}
		if err := b.Disarm(); err != nil || r.fw.ctl0&ixgbe.WDTEnable != 0 {
			t.Errorf("%04x disarm: %v, CTL0 %#x", dev, err, r.fw.ctl0)
		}

		// Power: unplugged -> bypass (aux off); OS shutdown -> bypass;
		// power back and boot -> bypass (aux on, main on).
		r.fw.osOff()
		if r.fw.state != ixgbe.Bypass {
			t.Errorf("%04x: OS off: state %d", dev, r.fw.state)
		}
		r.fw.state = ixgbe.Normal
		r.fw.powerOff()
		if r.fw.state != ixgbe.Bypass {
			t.Errorf("%04x: power off: state %d", dev, r.fw.state)
		}
		r.fw.state = ixgbe.Normal
		r.fw.powerOn()
		if r.fw.state != ixgbe.Bypass {
			t.Errorf("%04x: power on: state %d", dev, r.fw.state)
		}
		if len(r.fw.violations) > 0 {
			t.Errorf("%04x: protocol violations: %q", dev, r.fw.violations)
		}
		if err := b.Set(bypassapi.State("tap")); !errors.Is(err, errUnsupported) {
			t.Errorf("tap: %v", err)
		}
	}
}

// deadPins is ESDP with no firmware behind it (PCI function 1, or a NIC
// without bypass): SDO never moves.
type deadPins struct{ v uint32 }

func (d *deadPins) Read() uint32   { return d.v }
func (d *deadPins) Write(v uint32) { d.v = v }

func TestIxgbeErrors(t *testing.T) {
	if _, err := newIxgbe(&deadPins{}, ixgbe.Device82599BP, "0000:03:00.1 (eth2)", func(time.Duration) {}); err == nil ||
		!strings.Contains(err.Error(), "0000:03:00.1 (eth2): the firmware reports no state (CTL0 0x00000000 after 6 reads): no bypass firmware answers") {
		t.Errorf("no firmware: %v", err)
	}
	if _, err := newIxgbe(&deadPins{}, 0x10fb, "x", func(time.Duration) {}); err == nil || !strings.Contains(err.Error(), "10fb is not an Intel bypass adapter") {
		t.Errorf("82599 without bypass: %v", err)
	}

	// Finding function 0 from the port's interface.
	root := t.TempDir()
	net := filepath.Join(root, "class", "net")
	nic := func(ifname, addr, vendor, device string) {
		dev := filepath.Join(root, "devices", "pci0000:00", "0000:00:01.0", addr)
		for _, d := range []string{dev, filepath.Join(net, ifname)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(dev, "vendor"), []byte(vendor+"\n"), 0o644)
		os.WriteFile(filepath.Join(dev, "device"), []byte(device+"\n"), 0o644)
		if err := os.Symlink(dev, filepath.Join(net, ifname, "device")); err != nil {
			t.Fatal(err)
		}
	}
	nic("eth1", "0000:03:00.0", "0x8086", "0x155d")
	nic("eth2", "0000:03:00.1", "0x8086", "0x155d")
	nic("eth3", "0000:04:00.0", "0x8086", "0x10fb")
	if dir, dev, err := ixgbeFunction0(net, "eth1"); err != nil || dev != ixgbe.Device82599BP || filepath.Base(dir) != "0000:03:00.0" {
		t.Errorf("eth1: %s %04x %v", dir, dev, err)
	}
	if _, _, err := ixgbeFunction0(net, "eth2"); err == nil || !strings.Contains(err.Error(), "only function 0 of the adapter drives the bypass pair") {
		t.Errorf("eth2: %v", err)
	}
	if _, _, err := ixgbeFunction0(net, "eth3"); err == nil || !strings.Contains(err.Error(), "is 8086:10fb, not an Intel bypass adapter") {
		t.Errorf("eth3: %v", err)
	}
	if _, _, err := ixgbeFunction0(net, "eth9"); err == nil || !strings.Contains(err.Error(), "eth9 has no PCI device") {
		t.Errorf("eth9: %v", err)
	}
}

// TestIxgbeThroughBypassd runs bypassd's supervisor on an operator
// profile whose pair is an 82599 bypass adapter, against the emulated
// firmware: boot in bypass, normal once the forwarder is live, bypass when
// forwarderd is killed, bypass by the firmware's watchdog when bypassd is
// killed, no EEPROM write of a setting on a restart, and the power-off
// default.
func TestIxgbeThroughBypassd(t *testing.T) {
	dir := t.TempDir()
	prof := `name = "qemu"
description = "a box with an Intel 82599 bypass adapter"
[[port]]
name = "MGMT"
pci = "0000:00:03.0"
management = true
[[port]]
name = "LAN1"
pci = "0000:00:04.0"
[[port]]
name = "LAN2"
pci = "0000:00:05.0"
[[bypass_pair]]
name = "pair1"
ports = ["LAN1", "LAN2"]
backend = "ixgbe"
register_map = "vendor"
power_off = "bypass"
os_off = "bypass"
power_restore = "bypass"
power_up = "bypass"
timer_expiry = "bypass"
timer = "5s"
`
	if err := os.WriteFile(filepath.Join(dir, "qemu.toml"), []byte(prof), 0o644); err != nil {
		t.Fatal(err)
	}
	sys := fakeSysClassNet(t, map[string]string{"eth0": "0000:00:03.0", "eth1": "0000:00:04.0", "eth2": "0000:00:05.0"})
	r := newIxgbeRig(ixgbe.Device82599BP)
	// A box that ran bypassd before: power-up is bypass in the EEPROM,
	// so it boots in bypass.
	r.fw.ctl0 = r.fw.ctl0&^(ixgbe.FieldMask<<ixgbe.MainOnShift) | ixgbe.Bypass<<ixgbe.MainOnShift
	r.fw.powerOn()
	l := &boxLife{t: t, c: r.c, cfg: config.Default(), profileDir: dir, sys: sys, pairs: 1, // qemu: seg1 is LAN1+LAN2 with pair1
		open: func(bp config.BypassPair, ifs [2]string) (Backend, error) {
			if bp.Backend != "ixgbe" || ifs[0] != "eth1" {
				t.Fatalf("pair %s: backend %s on %v", bp.Name, bp.Backend, ifs)
			}
			return newIxgbe(r.fw, ixgbe.Device82599BP, "0000:04:00.0 (eth1)", r.sleep)
		},
		tick: r.fw.advance}
	state := func(want uint32, what string) {
		t.Helper()
		if r.fw.state != want {
			t.Fatalf("%s: firmware state %d, want %d", what, r.fw.state, want)
		}
	}
	state(ixgbe.Bypass, "powered on")
	l.start()
	l.run(10*time.Second, true)
	state(ixgbe.Bypass, "booted, forwarder not live")
	if r.fw.action(ixgbe.MainOnShift) != ixgbe.Bypass || r.fw.action(ixgbe.MainOffShift) != ixgbe.Bypass || r.fw.ctl0&ixgbe.WDTEnable == 0 {
		t.Errorf("CTL0 %#08x after start", r.fw.ctl0)
	}
	l.forwarder(true)
	l.run(8*time.Second, true)
	state(ixgbe.Normal, "forwarder live past the hold-down")
	l.forwarder(false)
	l.run(time.Second, true)
	state(ixgbe.Bypass, "forwarderd killed")
	l.forwarder(true)
	l.run(20*time.Second, true)
	state(ixgbe.Normal, "forwarderd back")

	// bypassd killed: the firmware's 8s watchdog bypasses.
	l.run(5*time.Second, false)
	state(ixgbe.Normal, "bypassd dead for 5s of an 8s watchdog")
	l.run(5*time.Second, false)
	state(ixgbe.Bypass, "bypassd dead past the firmware's watchdog")

	writes := r.fw.eepromWrite
	l.start()
	l.run(20*time.Second, true)
	state(ixgbe.Normal, "bypassd restarted")
	if r.fw.eepromWrite != writes {
		t.Errorf("a restart rewrote settings: %d EEPROM writes, had %d", r.fw.eepromWrite, writes)
	}

	r.fw.powerOff()
	state(ixgbe.Bypass, "power off")
	r.fw.powerOn()
	state(ixgbe.Bypass, "power back")
	if len(r.fw.violations) > 0 {
		t.Errorf("protocol violations: %q", r.fw.violations)
	}
}
