package bypass

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// smbusTarget is a device on an emulated SMBus, answering the
// transactions the host adapter sends to its address.
type smbusTarget interface {
	sendByte(v byte) error
	writeByteData(cmd, v byte) error
	readByteData(cmd byte) (byte, error)
	readWordData(cmd byte) (uint16, error)
	receiveByte() (byte, error)
}

// errNack is what the adapter reports when no device acknowledges its
// address (i2c-i801 returns ENXIO).
var errNack = unix.ENXIO

// emuSMBus is a host SMBus adapter with devices on its main segment,
// some of them I2C switches (PCA9545/PCA9548) with devices behind their
// channels. A transaction reaches every device at its address on the main
// segment and behind every enabled channel; two that answer at once are
// a bus collision, as on the wire.
type emuSMBus struct {
	devices map[byte]smbusTarget
	log     []string
	closes  int
}

func newEmuSMBus() *emuSMBus { return &emuSMBus{devices: map[byte]smbusTarget{}} }

// pca954x is an I2C switch: a send-byte sets its control register, one
// bit per channel.
type pca954x struct {
	ctrl     byte
	channels int
	behind   []map[byte]smbusTarget
}

func newPCA954x(channels int) *pca954x {
	s := &pca954x{channels: channels}
	for range channels {
		s.behind = append(s.behind, map[byte]smbusTarget{})
	}
	return s
}

func (s *pca954x) sendByte(v byte) error {
	if v>>s.channels != 0 {
		return fmt.Errorf("switch: channel mask %#02x beyond its %d channels", v, s.channels)
	}
	s.ctrl = v
	return nil
}
func (s *pca954x) writeByteData(cmd, v byte) error     { return errors.New("switch: no registers") }
func (s *pca954x) readByteData(cmd byte) (byte, error) { return s.ctrl, nil }
func (s *pca954x) receiveByte() (byte, error)          { return s.ctrl, nil }
func (s *pca954x) readWordData(cmd byte) (uint16, error) {
	return 0, errors.New("switch: no word registers")
}

// reach lists the devices that see a transaction to addr.
func reach(devs map[byte]smbusTarget, addr byte) []smbusTarget {
	var out []smbusTarget
	if d, ok := devs[addr]; ok {
		out = append(out, d)
	}
	for _, d := range devs {
		if sw, ok := d.(*pca954x); ok {
			for ch := range sw.channels {
				if sw.ctrl&(1<<ch) != 0 {
					out = append(out, reach(sw.behind[ch], addr)...)
				}
			}
		}
	}
	return out
}

func (b *emuSMBus) target(addr byte) (smbusTarget, error) {
	ds := reach(b.devices, addr)
	switch len(ds) {
	case 0:
		return nil, errNack
	case 1:
		return ds[0], nil
	}
	return nil, fmt.Errorf("bus collision: %d devices answer at %#02x", len(ds), addr)
}

func (b *emuSMBus) SendByte(addr, v byte) error {
	b.log = append(b.log, fmt.Sprintf("send %#02x %#02x", addr, v))
	d, err := b.target(addr)
	if err != nil {
		return err
	}
	return d.sendByte(v)
}

func (b *emuSMBus) WriteByteData(addr, cmd, v byte) error {
	b.log = append(b.log, fmt.Sprintf("write %#02x %#02x=%#02x", addr, cmd, v))
	d, err := b.target(addr)
	if err != nil {
		return err
	}
	return d.writeByteData(cmd, v)
}

func (b *emuSMBus) ReadByteData(addr, cmd byte) (byte, error) {
	d, err := b.target(addr)
	if err != nil {
		return 0, err
	}
	return d.readByteData(cmd)
}

func (b *emuSMBus) ReceiveByte(addr byte) (byte, error) {
	b.log = append(b.log, fmt.Sprintf("receive %#02x", addr))
	d, err := b.target(addr)
	if err != nil {
		return 0, err
	}
	return d.receiveByte()
}

func (b *emuSMBus) ReadWordData(addr, cmd byte) (uint16, error) {
	d, err := b.target(addr)
	if err != nil {
		return 0, err
	}
	return d.readWordData(cmd)
}

// Close is counted: every backend that opened the bus closes it, and the
// devices stay as they are, as on a real bus.
func (b *emuSMBus) Close() error { b.closes++; return nil }

// writes lists the byte-data writes logged since the last call.
func (b *emuSMBus) take() []string {
	l := b.log
	b.log = nil
	return l
}
