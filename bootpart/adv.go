package bootpart

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// syslinux keeps an auxiliary data vector (ADV) in the last two 512-byte
// sectors of ldlinux.sys: two copies of one sector, each a head magic, a
// checksum, 500 bytes of tagged items (tag, length, data; tag 0 ends
// them) and a tail magic. Item 1 is the boot-once command, which
// ldlinux clears (and writes back) before it boots it. Layout and
// constants: syslinux's libinstaller/setadv.c and advio.c and
// com32/include/syslinux/advconst.h. Two copies make the write safe
// against power loss: syslinux takes the first copy that checks out.
const (
	advSize     = 512
	advLen      = advSize - 3*4
	advMagic1   = 0x5a2d2fa5 // head
	advMagic2   = 0xa3041767 // checksum total
	advMagic3   = 0xdd28bf64 // tail
	advEnd      = 0
	advBootOnce = 1
)

// ADV is syslinux's auxiliary data vector: both copies.
type ADV [2 * advSize]byte

// advValid says whether one copy checks out.
func advValid(p []byte) bool {
	le := binary.LittleEndian
	if le.Uint32(p) != advMagic1 || le.Uint32(p[advSize-4:]) != advMagic3 {
		return false
	}
	var sum uint32
	for i := 4; i < advSize-4; i += 4 {
		sum += le.Uint32(p[i:])
	}
	return sum == advMagic2
}

// ParseADV reads the ADV from the last 1024 bytes of ldlinux.sys. A
// vector with neither copy valid reads as empty, as syslinux itself
// reads it; ok says whether one was.
func ParseADV(b []byte) (a ADV, ok bool, err error) {
	if len(b) != len(a) {
		return a, false, fmt.Errorf("ADV of %d bytes, want %d", len(b), len(a))
	}
	switch {
	case advValid(b[:advSize]):
		copy(a[:advSize], b[:advSize])
	case advValid(b[advSize:]):
		copy(a[:advSize], b[advSize:])
	default:
		a.seal()
		return a, false, nil
	}
	a.seal()
	return a, true, nil
}

// seal sets the first copy's magics and checksum and copies it over the
// second.
func (a *ADV) seal() {
	le := binary.LittleEndian
	le.PutUint32(a[0:], advMagic1)
	le.PutUint32(a[advSize-4:], advMagic3)
	sum := uint32(advMagic2)
	for i := 8; i < advSize-4; i += 4 {
		sum -= le.Uint32(a[i:])
	}
	le.PutUint32(a[4:], sum)
	copy(a[advSize:], a[:advSize])
}

// items walks the tagged items of the first copy.
func (a *ADV) items(f func(tag byte, data []byte)) {
	p := a[8 : 8+advLen]
	for len(p) >= 2 && p[0] != advEnd {
		n := int(p[1])
		if 2+n > len(p) {
			return // overrun: syslinux treats the rest as free
		}
		f(p[0], p[2:2+n])
		p = p[2+n:]
	}
}

// Get returns item tag, or nil.
func (a *ADV) Get(tag byte) []byte {
	var out []byte
	a.items(func(t byte, d []byte) {
		if t == tag {
			out = append([]byte(nil), d...)
		}
	})
	return out
}

// Set replaces item tag with data (none: removes it), keeping the others.
func (a *ADV) Set(tag byte, data []byte) error {
	if tag == advEnd {
		return errors.New("ADV tag 0 ends the items")
	}
	if len(data) > 255 {
		return fmt.Errorf("ADV item of %d bytes, at most 255 fit", len(data))
	}
	var kept []byte
	a.items(func(t byte, d []byte) {
		if t != tag {
			kept = append(kept, t, byte(len(d)))
			kept = append(kept, d...)
		}
	})
	if len(data) > 0 {
		kept = append(kept, tag, byte(len(data)))
		kept = append(kept, data...)
	}
	if len(kept) > advLen {
		return fmt.Errorf("ADV items of %d bytes, at most %d fit", len(kept), advLen)
	}
	p := a[8 : 8+advLen]
	clear(p)
	copy(p, kept)
	a.seal()
	return nil
}

// BootOnce is the boot-once command, "" when none is set.
func (a *ADV) BootOnce() string { return string(a.Get(advBootOnce)) }

// SetBootOnce sets (or, with "", clears) the boot-once command: a label
// of syslinux.cfg.
func (a *ADV) SetBootOnce(cmd string) error { return a.Set(advBootOnce, []byte(cmd)) }
