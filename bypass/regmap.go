package bypass

import (
	"fmt"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// regSpace is byte-wide register access to one relay controller: Super I/O
// configuration registers, SMBus commands or I/O ports. A session brackets
// a group of accesses (the Super I/O's configuration mode is entered and
// left around each group, so nothing is left unlocked between them).
type regSpace interface {
	begin() error
	end() error
	read(ldn, reg int) (byte, error)
	write(ldn, reg int, v byte) error
	describe() string
}

// regBackend drives a relay described by a config.RegisterMap over a
// regSpace: every state, event default and timer operation is a list of
// read-modify-writes of bit groups.
type regBackend struct {
	kind  string
	space regSpace
	m     config.RegisterMap
	caps  bypassapi.Caps
	count int // timer count last loaded
}

func newRegBackend(kind string, space regSpace, m config.RegisterMap) (*regBackend, error) {
	b := &regBackend{kind: kind, space: space, m: m}
	b.caps = regCaps(m)
	if len(m.Init) > 0 {
		if err := b.apply("init", m.Init); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// regCaps derives the capabilities from what the map can write.
func regCaps(m config.RegisterMap) bypassapi.Caps {
	c := bypassapi.Caps{Events: map[bypassapi.Event][]bypassapi.State{}, Fixed: map[bypassapi.Event]bypassapi.State{}, ReadBack: true, ReadBackOf: bypassapi.ReadsLatch, LinkDownInBypass: true}
	tableCaps(&c, &m.State, m.Event)
	powerOffNotes(&c)
	if t := m.Timer; t.Unit.Duration > 0 {
		c.Timer = &bypassapi.TimerCaps{Unit: t.Unit.Duration, Min: t.Unit.Duration, Max: time.Duration(t.Max) * t.Unit.Duration, TimeLeft: t.CountsDown}
		if _, ok := c.Events[bypassapi.TimerExpiry]; !ok {
			c.Notes = append(c.Notes, "what the relay does when its timer expires is not in the map (assumed: bypass)")
		}
	} else {
		c.Notes = append(c.Notes, "no controller timer in the map: if bypassd dies the relay keeps its state")
	}
	return c
}

// powerOffNotes records the physics every bypass relay shares: without
// power it rests in bypass, so "disconnect" cannot outlast power.
func powerOffNotes(c *bypassapi.Caps) {
	if _, ok := c.Events[bypassapi.PowerOff]; !ok {
		c.Fixed[bypassapi.PowerOff] = bypassapi.Bypass
	}
	if !c.CanDefault(bypassapi.PowerOff, bypassapi.Disconnect) {
		c.Notes = append(c.Notes, "relay cannot fail open without power: on power loss it rests in bypass")
	}
	if c.Can(bypassapi.Disconnect) {
		c.Notes = append(c.Notes, "disconnect holds only while powered")
	}
}

func (b *regBackend) Caps() bypassapi.Caps { return b.caps }

// apply performs the writes of one list in one session.
func (b *regBackend) apply(what string, list []config.RegBits) (err error) {
	if err := b.space.begin(); err != nil {
		return fmt.Errorf("%s: %s: %w", b.space.describe(), what, err)
	}
	defer func() {
		if e := b.space.end(); e != nil && err == nil {
			err = fmt.Errorf("%s: %s: %w", b.space.describe(), what, e)
		}
	}()
	for _, rb := range list {
		v, err := b.space.read(rb.LDN, rb.Reg)
		if err != nil {
			return fmt.Errorf("%s: %s: reading %#x: %w", b.space.describe(), what, rb.Reg, err)
		}
		nv := v&^byte(rb.Mask) | byte(rb.Value)
		if err := b.space.write(rb.LDN, rb.Reg, nv); err != nil {
			return fmt.Errorf("%s: %s: writing %#x=%#02x: %w", b.space.describe(), what, rb.Reg, nv, err)
		}
	}
	return nil
}

// match reports whether every write of list reads back as written, and
// the registers it read (for messages).
// Each register is read once per session (cache).
func (b *regBackend) match(list []config.RegBits, cache map[[2]int]byte) (bool, string, error) {
	var seen []string
	for _, rb := range list {
		key := [2]int{rb.LDN, rb.Reg}
		v, ok := cache[key]
		if !ok {
			var err error
			if v, err = b.space.read(rb.LDN, rb.Reg); err != nil {
				return false, "", fmt.Errorf("%s: reading %#x: %w", b.space.describe(), rb.Reg, err)
			}
			cache[key] = v
		}
		seen = append(seen, fmt.Sprintf("%#x=%#02x", rb.Reg, v))
		if int(v)&rb.Mask != rb.Value {
			return false, strings.Join(seen, " "), nil
		}
	}
	return true, strings.Join(seen, " "), nil
}

// recognise reads which state of rs the registers are in.
func (b *regBackend) recognise(what string, rs *config.RegStates) (_ bypassapi.State, err error) {
	if err := b.space.begin(); err != nil {
		return bypassapi.Unknown, err
	}
	defer func() {
		if e := b.space.end(); e != nil && err == nil {
			err = e
		}
	}()
	var seen []string
	cache := map[[2]int]byte{}
	for _, s := range recogniseOrder {
		list := writesOf(rs, s)
		if len(list) == 0 {
			continue
		}
		ok, regs, err := b.match(list, cache)
		if err != nil {
			return bypassapi.Unknown, err
		}
		if ok {
			return s, nil
		}
		seen = append(seen, regs)
	}
	return bypassapi.Unknown, fmt.Errorf("%s: %s reads %s, which matches no state of the map", b.space.describe(), what, strings.Join(seen, "; "))
}

func (b *regBackend) Set(s bypassapi.State) error {
	list := writesOf(&b.m.State, s)
	if len(list) == 0 {
		return fmt.Errorf("%s: state %s: %w", b.kind, s, errUnsupported)
	}
	return b.apply("set "+string(s), list)
}

func (b *regBackend) Get() (bypassapi.State, error) { return b.recognise("state", &b.m.State) }

func (b *regBackend) SetDefault(e bypassapi.Event, s bypassapi.State) error {
	list := writesOf(b.m.Event(string(e)), s)
	if len(list) == 0 {
		return fmt.Errorf("%s: %s default %s: %w", b.kind, e, s, errUnsupported)
	}
	return b.apply(fmt.Sprintf("%s default %s", e, s), list)
}

func (b *regBackend) Default(e bypassapi.Event) (bypassapi.State, error) {
	rs := b.m.Event(string(e))
	if !anyWrites(rs) {
		return bypassapi.Unknown, fmt.Errorf("%s: reading the %s default: %w", b.kind, e, errUnsupported)
	}
	return b.recognise(string(e)+" default", rs)
}

func (b *regBackend) noTimer() error {
	return fmt.Errorf("%s: controller timer: %w", b.kind, errUnsupported)
}

func (b *regBackend) Arm(d time.Duration) (time.Duration, error) {
	t := b.m.Timer
	if t.Unit.Duration <= 0 {
		return 0, b.noTimer()
	}
	n := int(min(roundUp(d, t.Unit.Duration), int64(t.Max)))
	if err := b.loadCount(n); err != nil {
		return 0, err
	}
	if len(t.Arm) > 0 {
		if err := b.apply("arm timer", t.Arm); err != nil {
			return 0, err
		}
	}
	b.count = n
	return time.Duration(n) * t.Unit.Duration, nil
}

func (b *regBackend) loadCount(n int) error {
	return b.apply(fmt.Sprintf("timer count %d", n), []config.RegBits{{Reg: b.m.Timer.Reg, Mask: 0xff, Value: n}})
}

func (b *regBackend) Kick() error {
	t := b.m.Timer
	if t.Unit.Duration <= 0 {
		return b.noTimer()
	}
	if b.count == 0 {
		return fmt.Errorf("%s: kick: timer not armed", b.kind)
	}
	if t.CountsDown {
		left, err := b.readCount()
		if err != nil {
			return err
		}
		if left == 0 {
			return fmt.Errorf("%s: %w", b.kind, errTimerExpired)
		}
	}
	if len(t.Kick) > 0 {
		return b.apply("kick timer", t.Kick)
	}
	return b.loadCount(b.count)
}

func (b *regBackend) readCount() (_ int, err error) {
	if err := b.space.begin(); err != nil {
		return 0, err
	}
	defer func() {
		if e := b.space.end(); e != nil && err == nil {
			err = e
		}
	}()
	v, err := b.space.read(0, b.m.Timer.Reg)
	return int(v), err
}

func (b *regBackend) Disarm() error {
	t := b.m.Timer
	if t.Unit.Duration <= 0 {
		return b.noTimer()
	}
	b.count = 0
	if len(t.Disarm) > 0 {
		return b.apply("disarm timer", t.Disarm)
	}
	return b.loadCount(0)
}

func (b *regBackend) TimeLeft() (time.Duration, error) {
	t := b.m.Timer
	if t.Unit.Duration <= 0 || !t.CountsDown {
		return 0, fmt.Errorf("%s: timer time left: %w", b.kind, errUnsupported)
	}
	n, err := b.readCount()
	return time.Duration(n) * t.Unit.Duration, err
}

func (b *regBackend) Close() error {
	if c, ok := b.space.(interface{ close() error }); ok {
		return c.close()
	}
	return nil
}

// portIO is byte access to the x86 I/O space, as /dev/port gives it: the
// file offset is the port number.
type portIO interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
}

func inb(io portIO, port int) (byte, error) {
	var b [1]byte
	if _, err := io.ReadAt(b[:], int64(port)); err != nil {
		return 0, fmt.Errorf("in %#x: %w", port, err)
	}
	return b[0], nil
}

func outb(io portIO, port int, v byte) error {
	if _, err := io.WriteAt([]byte{v}, int64(port)); err != nil {
		return fmt.Errorf("out %#x: %w", port, err)
	}
	return nil
}
