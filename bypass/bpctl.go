package bypass

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"golang.org/x/sys/unix"
)

// Silicom's bpctl driver (/dev/bpctl0): one ioctl per command, each
// carrying a struct bpctl_cmd; in_param[1] names the controlling port by
// ifindex, in_param[2] is the value, status the result (negative: not
// supported or failed).
type bpctlCmd struct {
	Status   int32
	Data     [8]int32
	InParam  [8]int32
	OutParam [8]int32
}

// Commands (CMND_TYPE_SD in bp_ioctl.h).
const (
	bpGetBypassCaps   = 4
	bpGetWDSetCaps    = 5
	bpSetBypass       = 6
	bpGetBypass       = 7
	bpSetBypassWD     = 9
	bpGetBypassWD     = 10
	bpGetWDExpireTime = 11
	bpResetBypassWD   = 12
	bpSetBypassPwoff  = 15
	bpGetBypassPwoff  = 16
	bpSetBypassPwup   = 17
	bpGetBypassPwup   = 18
	bpSetDisc         = 36
	bpGetDisc         = 37
	bpSetDiscPwup     = 41
	bpGetDiscPwup     = 42
	bpctlMagic        = 'J'
	bpctlCmdSize      = int(unsafe.Sizeof(bpctlCmd{}))
	iocRead, iocWrite = 2, 1
	iocDirShift       = 30
	iocSizeShift      = 16
	iocTypeShift      = 8
)

// bpctlRequest is IOCTL_TX_MSG(cmd): _IOWR('J', cmd, struct bpctl_cmd).
func bpctlRequest(cmd int) uintptr {
	return uintptr((iocRead|iocWrite)<<iocDirShift | bpctlCmdSize<<iocSizeShift | bpctlMagic<<iocTypeShift | cmd)
}

// Capability bits (GET_BYPASS_CAPS).
const (
	bpCap          = 0x01
	bpStatusCap    = 0x02
	swCtlCap       = 0x08
	bpPwoffOnCap   = 0x80
	bpPwoffOffCap  = 0x0100
	bpPwoffCtlCap  = 0x0200
	bpPwupOnCap    = 0x0400
	bpPwupOffCap   = 0x0800
	bpPwupCtlCap   = 0x1000
	wdCtlCap       = 0x2000
	wdTimeoutCap   = 0x8000
	discCap        = 0x10000000
	discPwupCtlCap = 0x40000000
	wdtStepTime    = 0x10 // GET_WD_SET_CAPS: steps double
)

var bpctlNames = map[int]string{
	bpGetBypassCaps: "GET_BYPASS_CAPS", bpGetWDSetCaps: "GET_WD_SET_CAPS", bpSetBypass: "SET_BYPASS", bpGetBypass: "GET_BYPASS",
	bpSetBypassWD: "SET_BYPASS_WD", bpGetBypassWD: "GET_BYPASS_WD", bpGetWDExpireTime: "GET_WD_EXPIRE_TIME",
	bpResetBypassWD: "RESET_BYPASS_WD_TIMER", bpSetBypassPwoff: "SET_BYPASS_PWOFF", bpGetBypassPwoff: "GET_BYPASS_PWOFF",
	bpSetBypassPwup: "SET_BYPASS_PWUP", bpGetBypassPwup: "GET_BYPASS_PWUP", bpSetDisc: "SET_DISC", bpGetDisc: "GET_DISC",
	bpSetDiscPwup: "SET_DISC_PWUP", bpGetDiscPwup: "GET_DISC_PWUP",
}

// ioctler performs one bpctl ioctl; tests substitute an emulated adapter.
type ioctler interface {
	ioctl(req uintptr, c *bpctlCmd) error
	Close() error
}

type bpctlFile struct{ f *os.File }

func (d bpctlFile) ioctl(req uintptr, c *bpctlCmd) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, d.f.Fd(), req, uintptr(unsafe.Pointer(c))); errno != 0 {
		return errno
	}
	return nil
}

func (d bpctlFile) Close() error { return d.f.Close() }

func openBpctl(dev string) (bpctlFile, error) {
	if dev == "" {
		dev = "/dev/bpctl0"
	}
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return bpctlFile{}, fmt.Errorf("bpctl: opening %s (is the bpctl driver loaded?): %w", dev, err)
	}
	return bpctlFile{f}, nil
}

// bpctlBackend drives one Silicom bypass pair, its master port given by
// ifindex.
type bpctlBackend struct {
	dev     ioctler
	ifindex int
	caps    bypassapi.Caps
	bits    int32
}

// call issues cmd with value and returns status, or an error for a failed
// ioctl or a negative status.
func (b *bpctlBackend) call(cmd int, value int32) (bpctlCmd, error) {
	c := bpctlCmd{}
	c.InParam[1] = int32(b.ifindex)
	c.InParam[2] = value
	if err := b.dev.ioctl(bpctlRequest(cmd), &c); err != nil {
		return c, fmt.Errorf("bpctl %s: %w", bpctlNames[cmd], err)
	}
	if c.Status < 0 {
		return c, fmt.Errorf("bpctl %s(%d): status %d (not supported by this port, or not the pair's master port)", bpctlNames[cmd], value, c.Status)
	}
	return c, nil
}

func newBpctl(dev ioctler, ifindex int) (*bpctlBackend, error) {
	b := &bpctlBackend{dev: dev, ifindex: ifindex}
	c, err := b.call(bpGetBypassCaps, 0)
	if err != nil {
		return nil, err
	}
	b.bits = c.Status
	if b.bits&bpCap == 0 || b.bits&swCtlCap == 0 {
		return nil, fmt.Errorf("bpctl: ifindex %d reports caps %#x: not a software-controlled bypass port", ifindex, b.bits)
	}
	caps := bypassapi.Caps{Events: map[bypassapi.Event][]bypassapi.State{}, Fixed: map[bypassapi.Event]bypassapi.State{}, ReadBack: b.bits&bpStatusCap != 0, LinkDownInBypass: true,
		States: []bypassapi.State{bypassapi.Normal, bypassapi.Bypass}, ReadBackOf: bypassapi.ReadsNothing}
	if caps.ReadBack {
		caps.ReadBackOf = bypassapi.ReadsController
	}
	if b.bits&discCap != 0 {
		caps.States = append(caps.States, bypassapi.Disconnect)
	}
	switch {
	case b.bits&bpPwoffCtlCap != 0:
		caps.Events[bypassapi.PowerOff] = []bypassapi.State{bypassapi.Bypass, bypassapi.Disconnect}
	case b.bits&bpPwoffOnCap != 0:
		caps.Fixed[bypassapi.PowerOff] = bypassapi.Bypass
	case b.bits&bpPwoffOffCap != 0:
		caps.Fixed[bypassapi.PowerOff] = bypassapi.Disconnect
	}
	switch {
	case b.bits&bpPwupCtlCap != 0:
		caps.Events[bypassapi.PowerUp] = []bypassapi.State{bypassapi.Normal, bypassapi.Bypass}
		if b.bits&discPwupCtlCap != 0 {
			caps.Events[bypassapi.PowerUp] = append(caps.Events[bypassapi.PowerUp], bypassapi.Disconnect)
		}
	case b.bits&bpPwupOnCap != 0:
		caps.Fixed[bypassapi.PowerUp] = bypassapi.Bypass
	case b.bits&bpPwupOffCap != 0:
		caps.Fixed[bypassapi.PowerUp] = bypassapi.Normal
	}
	if caps.CanDefault(bypassapi.PowerOff, bypassapi.Disconnect) {
		caps.Notes = append(caps.Notes, "power_off disconnect means the relay does not bypass without power: the unpowered NIC then passes nothing")
	} else {
		caps.Notes = append(caps.Notes, "relay cannot fail open without power: on power loss it rests in bypass")
	}
	if b.bits&wdCtlCap != 0 {
		caps.Fixed[bypassapi.TimerExpiry] = bypassapi.Bypass
		wc, err := b.call(bpGetWDSetCaps, 0)
		if err != nil {
			return nil, err
		}
		minT := time.Duration(wc.Status&0xf) * 100 * time.Millisecond
		steps := int(wc.Status>>5) & 0xf
		t := &bypassapi.TimerCaps{Unit: minT, Min: minT, TimeLeft: b.bits&wdTimeoutCap != 0}
		if wc.Status&wdtStepTime != 0 {
			t.Max = minT << max(steps-1, 0)
			caps.Notes = append(caps.Notes, fmt.Sprintf("timer steps double: %v x 2^n, n < %d; the driver rounds up", minT, steps))
		} else {
			t.Max = minT * time.Duration(max(steps, 1))
		}
		caps.Timer = t
	} else {
		caps.Notes = append(caps.Notes, "no bypass watchdog: if bypassd dies the relay keeps its state")
	}
	b.caps = caps
	return b, nil
}

func (b *bpctlBackend) Caps() bypassapi.Caps { return b.caps }

func (b *bpctlBackend) Set(s bypassapi.State) error {
	if !b.caps.Can(s) {
		return fmt.Errorf("bpctl: state %s: %w", s, errUnsupported)
	}
	disc := b.bits&discCap != 0
	var err error
	switch s {
	case bypassapi.Normal, bypassapi.Bypass:
		if disc {
			if _, err = b.call(bpSetDisc, 0); err != nil {
				return err
			}
		}
		_, err = b.call(bpSetBypass, boolInt(s == bypassapi.Bypass))
	case bypassapi.Disconnect:
		if _, err = b.call(bpSetBypass, 0); err != nil {
			return err
		}
		_, err = b.call(bpSetDisc, 1)
	}
	return err
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func (b *bpctlBackend) Get() (bypassapi.State, error) {
	if !b.caps.ReadBack {
		return bypassapi.Unknown, fmt.Errorf("bpctl: reading the state: %w", errUnsupported)
	}
	c, err := b.call(bpGetBypass, 0)
	if err != nil {
		return bypassapi.Unknown, err
	}
	if c.Status == 1 {
		return bypassapi.Bypass, nil
	}
	if b.bits&discCap != 0 {
		d, err := b.call(bpGetDisc, 0)
		if err != nil {
			return bypassapi.Unknown, err
		}
		if d.Status == 1 {
			return bypassapi.Disconnect, nil
		}
	}
	return bypassapi.Normal, nil
}

func (b *bpctlBackend) SetDefault(e bypassapi.Event, s bypassapi.State) error {
	if !b.caps.CanDefault(e, s) {
		return fmt.Errorf("bpctl: %s default %s: %w", e, s, errUnsupported)
	}
	switch e {
	case bypassapi.PowerOff:
		_, err := b.call(bpSetBypassPwoff, boolInt(s == bypassapi.Bypass))
		return err
	case bypassapi.PowerUp:
		if b.bits&discPwupCtlCap != 0 {
			if _, err := b.call(bpSetDiscPwup, boolInt(s == bypassapi.Disconnect)); err != nil {
				return err
			}
		}
		_, err := b.call(bpSetBypassPwup, boolInt(s == bypassapi.Bypass))
		return err
	}
	return fmt.Errorf("bpctl: %s default: %w", e, errUnsupported)
}

func (b *bpctlBackend) Default(e bypassapi.Event) (bypassapi.State, error) {
	switch e {
	case bypassapi.PowerOff:
		if _, ok := b.caps.Events[bypassapi.PowerOff]; !ok {
			break
		}
		c, err := b.call(bpGetBypassPwoff, 0)
		if err != nil {
			return bypassapi.Unknown, err
		}
		if c.Status == 1 {
			return bypassapi.Bypass, nil
		}
		return bypassapi.Disconnect, nil
	case bypassapi.PowerUp:
		if _, ok := b.caps.Events[bypassapi.PowerUp]; !ok {
			break
		}
		if b.bits&discPwupCtlCap != 0 {
			c, err := b.call(bpGetDiscPwup, 0)
			if err != nil {
				return bypassapi.Unknown, err
			}
			if c.Status == 1 {
				return bypassapi.Disconnect, nil
			}
		}
		c, err := b.call(bpGetBypassPwup, 0)
		if err != nil {
			return bypassapi.Unknown, err
		}
		if c.Status == 1 {
			return bypassapi.Bypass, nil
		}
		return bypassapi.Normal, nil
	}
	if f, ok := b.caps.Fixed[e]; ok {
		return f, nil
	}
	return bypassapi.Unknown, fmt.Errorf("bpctl: %s default: %w", e, errUnsupported)
}

func (b *bpctlBackend) Arm(d time.Duration) (time.Duration, error) {
	if b.caps.Timer == nil {
		return 0, fmt.Errorf("bpctl: bypass watchdog: %w", errUnsupported)
	}
	ms := int32(max(d.Milliseconds(), 1))
	c, err := b.call(bpSetBypassWD, ms)
	if err != nil {
		return 0, err
	}
	// The driver answers with the timeout it rounded to.
	if c.Status > 0 {
		return time.Duration(c.Status) * time.Millisecond, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (b *bpctlBackend) Kick() error {
	if b.caps.Timer == nil {
		return fmt.Errorf("bpctl: bypass watchdog: %w", errUnsupported)
	}
	if b.caps.Timer.TimeLeft {
		c, err := b.call(bpGetWDExpireTime, 0)
		if err == nil && c.Data[0] < 0 {
			return fmt.Errorf("bpctl: %w", errTimerExpired)
		}
	}
	c, err := b.call(bpResetBypassWD, 0)
	if err != nil {
		return err
	}
	if c.Status == 0 {
		return fmt.Errorf("bpctl RESET_BYPASS_WD_TIMER: watchdog is not configured")
	}
	return nil
}

func (b *bpctlBackend) Disarm() error {
	if b.caps.Timer == nil {
		return fmt.Errorf("bpctl: bypass watchdog: %w", errUnsupported)
	}
	_, err := b.call(bpSetBypassWD, 0)
	return err
}

func (b *bpctlBackend) TimeLeft() (time.Duration, error) {
	if b.caps.Timer == nil || !b.caps.Timer.TimeLeft {
		return 0, fmt.Errorf("bpctl: watchdog time left: %w", errUnsupported)
	}
	c, err := b.call(bpGetWDExpireTime, 0)
	if err != nil {
		return 0, err
	}
	return time.Duration(max(c.Data[0], 0)) * time.Millisecond, nil
}

func (b *bpctlBackend) Close() error { return b.dev.Close() }
