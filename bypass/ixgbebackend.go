package bypass

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/bypass/ixgbe"
)

// Every field, code and sequence below is one of bypass/ixgbe's, each
// traced there to DPDK's and FreeBSD's ixgbe bypass code.

// esdpReg is the ESDP register of the adapter's PCI function 0.
type esdpReg interface {
	Read() uint32
	Write(v uint32)
}

// bitBang exchanges 32-bit words with the bypass firmware over three SDP
// pins. The ixgbe driver owns the NIC and uses other SDP pins of the same
// register, so every write is a read-modify-write of our pins only.
type bitBang struct {
	reg   esdpReg
	pins  ixgbe.Pins
	sleep func(time.Duration)
}

func (b *bitBang) set(v *uint32, pin uint32, high bool) {
	cur := b.reg.Read()
	ours := b.pins.SCK | b.pins.SDI | ixgbe.Dir(b.pins.SCK) | ixgbe.Dir(b.pins.SDI) | ixgbe.Dir(b.pins.SDO)
	if high {
		*v |= pin
	} else {
		*v &^= pin
	}
	b.reg.Write(cur&^ours | *v&ours)
	b.sleep(ixgbe.HalfClock)
}

// exchange clocks cmd out MSB first and the firmware's word in: SCK and
// SDI high, a start (SDI falls, then SCK), 32 bits each put on SDI,
// clocked by SCK high then low and followed by a sample of SDO, and a stop
// (SDI low, SCK high, then SDI rises). The firmware's first two bits are not
// the page's: they are replaced by cmd's page.
func (b *bitBang) exchange(cmd uint32) uint32 {
	p := b.pins
	v := ixgbe.Dir(p.SCK) | ixgbe.Dir(p.SDI) | p.SCK
	b.set(&v, p.SDI, true)
	b.set(&v, p.SDI, false) // start
	b.set(&v, p.SCK, false)
	var in uint32
	for i := range ixgbe.Bits {
		b.set(&v, p.SDI, cmd>>(ixgbe.Bits-1-i)&1 == 1)
		b.set(&v, p.SCK, true)
		b.set(&v, p.SCK, false)
		in <<= 1
		if b.reg.Read()&p.SDO != 0 {
			in |= 1
		}
		b.sleep(ixgbe.HalfClock)
	}
	b.set(&v, p.SDI, false)
	b.set(&v, p.SCK, true)
	b.set(&v, p.SDI, true) // stop
	return in&^ixgbe.PageMask | cmd&ixgbe.PageMask
}

// ixgbeBackend drives the relay of an Intel 82599 or X540 bypass adapter
// through its bypass firmware. CTL0 holds the state command, the current
// state, an action per event and the watchdog; it is kept in the
// firmware's EEPROM, so a write is slow and read back until it took, and
// event and watchdog settings are written only when they change.
type ixgbeBackend struct {
	bb      *bitBang
	where   string
	version byte
	caps    bypassapi.Caps
	close   func() error
	// ctl0 is CTL0 as last read with a state, while fresh says that no
	// write of ours may still be in flight: a write can start from it
	// without reading first.
	ctl0  uint32
	fresh bool
}

// ixgbeEvents are the CTL0 action fields of the events.
var ixgbeEvents = map[bypassapi.Event]uint32{
	bypassapi.PowerOff:     ixgbe.AuxOffShift,
	bypassapi.OSOff:        ixgbe.MainOffShift,
	bypassapi.PowerRestore: ixgbe.AuxOnShift,
	bypassapi.PowerUp:      ixgbe.MainOnShift,
	bypassapi.TimerExpiry:  ixgbe.WDTimeoutShift,
}

func ixgbeCode(s bypassapi.State) (uint32, bool) {
	switch s {
	case bypassapi.Normal:
		return ixgbe.Normal, true
	case bypassapi.Bypass:
		return ixgbe.Bypass, true
	case bypassapi.Disconnect:
		return ixgbe.Isolate, true
	}
	return 0, false
}

func ixgbeState(code uint32) bypassapi.State {
	switch code {
	case ixgbe.Normal:
		return bypassapi.Normal
	case ixgbe.Bypass:
		return bypassapi.Bypass
	case ixgbe.Isolate:
		return bypassapi.Disconnect
	}
	return bypassapi.Unknown
}

// newIxgbe talks to the firmware behind reg: it reads the firmware's
// version from its EEPROM, sets its clock and checks that it reports a
// state.
func newIxgbe(reg esdpReg, device uint16, where string, sleep func(time.Duration)) (*ixgbeBackend, error) {
	pins, err := ixgbe.PinsOf(device)
	if err != nil {
		return nil, fmt.Errorf("ixgbe: %w", err)
	}
	b := &ixgbeBackend{bb: &bitBang{reg: reg, pins: pins, sleep: sleep}, where: where}
	// Version: latch the EEPROM address, give the firmware 100 ms, read.
	cmd := uint32(ixgbe.CTL2|ixgbe.WE) | ixgbe.VersionAddr<<ixgbe.OffsetShift
	b.bb.exchange(cmd)
	sleep(100 * time.Millisecond)
	b.version = byte(b.bb.exchange(cmd&^ixgbe.WE) & ixgbe.DataMask)
	// The firmware's clock (for its event log): 0 s, valid, offset reset.
	b.bb.exchange(ixgbe.CTL1 | ixgbe.WE | ixgbe.Valid | ixgbe.OffTRst)
	sleep(100 * time.Millisecond)
	if _, err := b.readCTL0(); err != nil {
		return nil, fmt.Errorf("%w: no bypass firmware answers on these pins", err)
	}
	events := map[bypassapi.Event][]bypassapi.State{}
	for e := range ixgbeEvents {
		events[e] = []bypassapi.State{bypassapi.Normal, bypassapi.Bypass, bypassapi.Disconnect}
	}
	b.caps = bypassapi.Caps{States: []bypassapi.State{bypassapi.Normal, bypassapi.Bypass, bypassapi.Disconnect}, Events: events,
		Timer:    &bypassapi.TimerCaps{Unit: 500 * time.Millisecond, Min: time.Second, Max: 32 * time.Second},
		ReadBack: true, ReadBackOf: bypassapi.ReadsController, LinkDownInBypass: true,
		Notes: []string{
			fmt.Sprintf("Intel bypass firmware version %d on %s", b.version, where),
			"watchdog times are 1, 1.5, 2, 3, 4, 8, 16 or 32 s: a timer is rounded up to one of them; its time left cannot be read",
			"read-back is the firmware's state, not a sensor on the relay",
			"each exchange with the firmware takes 134 ms (1 ms after every pin change and sample): the relay moves with the first exchange of a state change, which takes four to six",
			"disconnect is the firmware's isolate",
		}}
	return b, nil
}

func (b *ixgbeBackend) Caps() bypassapi.Caps { return b.caps }

// readCTL0 reads CTL0, again while it reports no state: the firmware is
// busy storing an earlier write in its EEPROM.
func (b *ixgbeBackend) readCTL0() (uint32, error) {
	var v uint32
	for range ixgbe.CTL0Tries {
		if v = b.bb.exchange(ixgbe.CTL0); v&ixgbe.StatusMask != 0 {
			b.ctl0, b.fresh = v, true
			return v, nil
		}
	}
	return 0, fmt.Errorf("ixgbe: %s: the firmware reports no state (CTL0 %#08x after %d reads)", b.where, v, ixgbe.CTL0Tries)
}

// writeCTL0 sets the bits under mask to value: read, write with WE, and,
// when verify is set, read back until the EEPROM write took
// (ixgbe_bypass_set_generic). Unverified, the next readCTL0 waits for it.
func (b *ixgbeBackend) writeCTL0(mask, value uint32, verify bool) error {
	if !b.fresh {
		if _, err := b.readCTL0(); err != nil {
			return err
		}
	}
	cmd := b.ctl0&^mask&^ixgbe.PageMask | ixgbe.CTL0 | ixgbe.WE | value
	b.fresh = false
	b.bb.exchange(cmd)
	if !verify {
		return nil
	}
	var got uint32
	for range ixgbe.CTL0Tries {
		if got = b.bb.exchange(ixgbe.CTL0); ixgbe.ValidRead(cmd, got) {
			b.ctl0, b.fresh = got, true
			return nil
		}
	}
	return fmt.Errorf("ixgbe: %s: the firmware did not take CTL0 %#08x (reads %#08x after %d tries)", b.where, cmd, got, ixgbe.CTL0Tries)
}

// Set commands the state and reads it back, then hands control back to
// the events (mode auto), as the firmware only reacts to events in auto
// mode. The relay moves with the first of these exchanges.
func (b *ixgbeBackend) Set(s bypassapi.State) error {
	code, ok := ixgbeCode(s)
	if !ok {
		return fmt.Errorf("ixgbe: %s: %w", s, errUnsupported)
	}
	if err := b.writeCTL0(ixgbe.ModeMask, code, true); err != nil {
		return fmt.Errorf("setting %s: %w", s, err)
	}
	if err := b.writeCTL0(ixgbe.ModeMask, ixgbe.Nop, false); err != nil {
		return fmt.Errorf("back to auto after %s: %w", s, err)
	}
	return nil
}

func (b *ixgbeBackend) Get() (bypassapi.State, error) {
	ctl0, err := b.readCTL0()
	if err != nil {
		return bypassapi.Unknown, err
	}
	return ixgbeState(ctl0 & ixgbe.StatusMask >> ixgbe.StatusShift), nil
}

// SetDefault writes an event's action, only when it differs.
func (b *ixgbeBackend) SetDefault(e bypassapi.Event, s bypassapi.State) error {
	shift, ok := ixgbeEvents[e]
	code, ok2 := ixgbeCode(s)
	if !ok || !ok2 {
		return fmt.Errorf("ixgbe: %s default %s: %w", e, s, errUnsupported)
	}
	ctl0, err := b.readCTL0()
	if err != nil {
		return err
	}
	if ctl0>>shift&ixgbe.FieldMask == code {
		return nil
	}
	if err := b.writeCTL0(ixgbe.FieldMask<<shift, code<<shift, true); err != nil {
		return fmt.Errorf("%s default: %w", e, err)
	}
	return nil
}

func (b *ixgbeBackend) Default(e bypassapi.Event) (bypassapi.State, error) {
	shift, ok := ixgbeEvents[e]
	if !ok {
		return bypassapi.Unknown, errUnsupported
	}
	ctl0, err := b.readCTL0()
	if err != nil {
		return bypassapi.Unknown, err
	}
	return ixgbeState(ctl0 >> shift & ixgbe.FieldMask), nil // nop: Unknown
}

// Arm enables the watchdog with the shortest time at least d (written
// only when it differs) and pets it.
func (b *ixgbeBackend) Arm(d time.Duration) (time.Duration, error) {
	code, t := ixgbe.WDTCode(d)
	want := ixgbe.WDTEnable | code<<ixgbe.WDTValueShift
	ctl0, err := b.readCTL0()
	if err != nil {
		return 0, err
	}
	if ctl0&(ixgbe.WDTEnable|ixgbe.WDTValueMask) != want {
		if err := b.writeCTL0(ixgbe.WDTEnable|ixgbe.WDTValueMask, want, true); err != nil {
			return 0, fmt.Errorf("arming the watchdog: %w", err)
		}
	}
	return t, b.Kick()
}

// Kick pets the watchdog and resets the firmware's clock with it, then
// reads CTL1 until the pet took.
func (b *ixgbeBackend) Kick() error {
	cmd := uint32(ixgbe.CTL1 | ixgbe.WE | ixgbe.WDTPet | ixgbe.Valid | ixgbe.OffTRst)
	b.bb.exchange(cmd)
	for range ixgbe.PetTries {
		if ixgbe.ValidRead(cmd, b.bb.exchange(ixgbe.CTL1)) {
			return nil
		}
	}
	return fmt.Errorf("ixgbe: %s: the firmware did not take the watchdog pet", b.where)
}

func (b *ixgbeBackend) Disarm() error {
	ctl0, err := b.readCTL0()
	if err != nil || ctl0&ixgbe.WDTEnable == 0 {
		return err
	}
	return b.writeCTL0(ixgbe.WDTEnable, 0, true)
}

func (b *ixgbeBackend) TimeLeft() (time.Duration, error) { return 0, errUnsupported }

func (b *ixgbeBackend) Close() error {
	if b.close != nil {
		return b.close()
	}
	return nil
}

// mmapESDP is ESDP in a mapping of BAR 0 (sysfs resource0). The kernel
// lets it be mapped while the ixgbe driver holds the device: the driver
// does not claim its BAR exclusively, and the kernel is built without
// CONFIG_IO_STRICT_DEVMEM.
type mmapESDP struct{ p *uint32 }

func (m mmapESDP) Read() uint32   { return atomic.LoadUint32(m.p) }
func (m mmapESDP) Write(v uint32) { atomic.StoreUint32(m.p, v) }

// ixgbeFunction0 finds the PCI function behind ifname and checks that it
// is function 0 of an Intel bypass adapter: only it drives the pair.
func ixgbeFunction0(sysClassNet, ifname string) (dir string, device uint16, err error) {
	dir, err = filepath.EvalSymlinks(filepath.Join(sysClassNet, ifname, "device"))
	if err != nil {
		return "", 0, fmt.Errorf("ixgbe: %s has no PCI device: %w", ifname, err)
	}
	vendor, err1 := readHex(filepath.Join(dir, "vendor"))
	device, err2 := readHex(filepath.Join(dir, "device"))
	if err := errors.Join(err1, err2); err != nil {
		return "", 0, fmt.Errorf("ixgbe: %s: reading PCI IDs: %w", ifname, err)
	}
	addr := filepath.Base(dir)
	if _, err := ixgbe.PinsOf(device); vendor != ixgbe.VendorIntel || err != nil {
		return "", 0, fmt.Errorf("ixgbe: %s (%s) is %04x:%04x, not an Intel bypass adapter (8086:%04x, 8086:%04x)",
			ifname, addr, vendor, device, ixgbe.Device82599BP, ixgbe.DeviceX540BP)
	}
	if !strings.HasSuffix(addr, ".0") {
		return "", 0, fmt.Errorf("ixgbe: %s is PCI function %s: only function 0 of the adapter drives the bypass pair; list the port of function 0 first",
			ifname, addr)
	}
	return dir, device, nil
}

// openIxgbe maps BAR 0 of the adapter of the pair's first port.
func openIxgbe(sysClassNet, ifname string) (*ixgbeBackend, error) {
	dir, device, err := ixgbeFunction0(sysClassNet, ifname)
	if err != nil {
		return nil, err
	}
	res := filepath.Join(dir, "resource0")
	f, err := os.OpenFile(res, os.O_RDWR|os.O_SYNC, 0)
	if err != nil {
		return nil, fmt.Errorf("ixgbe: %w", err)
	}
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("ixgbe: mapping %s: %w", res, err)
	}
	reg := mmapESDP{p: (*uint32)(unsafe.Pointer(&mem[ixgbe.ESDP]))}
	b, err := newIxgbe(reg, device, fmt.Sprintf("%s (%s)", filepath.Base(dir), ifname), time.Sleep)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	b.close = func() error { return unix.Munmap(mem) }
	return b, nil
}
