package bypass

import (
	"fmt"
	"os"

	"github.com/ncpos/ncpos/config"
)

// superioSpace is a Winbond W83627-class Super I/O's configuration space
// through an index/data port pair: the entry key unlocks it (0x87 twice),
// register 0x07 selects the logical device, and the exit key (0xAA) locks
// it again. Registers below 0x30 are global; the rest belong to the
// selected logical device.
type superioSpace struct {
	io  portIO
	cfg config.SuperIO
	ldn int // logical device currently selected within a session
}

func (s *superioSpace) describe() string {
	return fmt.Sprintf("superio %#x/%#x ldn %#x", s.cfg.IndexPort, s.cfg.DataPort, s.cfg.LogicalDevice)
}

func (s *superioSpace) begin() error {
	for _, k := range s.cfg.EnterKey {
		if err := outb(s.io, s.cfg.IndexPort, byte(k)); err != nil {
			return err
		}
	}
	s.ldn = -1
	return s.selectLDN(s.cfg.LogicalDevice)
}

func (s *superioSpace) selectLDN(ldn int) error {
	if ldn == s.ldn {
		return nil
	}
	if err := outb(s.io, s.cfg.IndexPort, 0x07); err != nil {
		return err
	}
	if err := outb(s.io, s.cfg.DataPort, byte(ldn)); err != nil {
		return err
	}
	s.ldn = ldn
	return nil
}

func (s *superioSpace) end() error {
	s.ldn = -1
	return outb(s.io, s.cfg.IndexPort, byte(s.cfg.ExitKey))
}

func (s *superioSpace) device(ldn int) int {
	if ldn == 0 {
		return s.cfg.LogicalDevice
	}
	return ldn
}

func (s *superioSpace) read(ldn, reg int) (byte, error) {
	if err := s.selectLDN(s.device(ldn)); err != nil {
		return 0, err
	}
	if err := outb(s.io, s.cfg.IndexPort, byte(reg)); err != nil {
		return 0, err
	}
	return inb(s.io, s.cfg.DataPort)
}

func (s *superioSpace) write(ldn, reg int, v byte) error {
	if err := s.selectLDN(s.device(ldn)); err != nil {
		return err
	}
	if err := outb(s.io, s.cfg.IndexPort, byte(reg)); err != nil {
		return err
	}
	return outb(s.io, s.cfg.DataPort, v)
}

func (s *superioSpace) close() error {
	if c, ok := s.io.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// newSuperIO drives a relay on Super I/O GPIO through io (normally
// /dev/port).
func newSuperIO(io portIO, cfg config.SuperIO, m config.RegisterMap) (*regBackend, error) {
	sp := &superioSpace{io: io, cfg: cfg.WithDefaults(), ldn: -1}
	b, err := newRegBackend("superio", sp, m)
	if err != nil {
		return nil, err
	}
	b.caps.Notes = append(b.caps.Notes, "Super I/O access is not locked against other users (a kernel driver such as w83627hf_wdt must not be loaded)")
	return b, nil
}

// openPort opens the I/O space device (normally /dev/port) for reading and
// writing.
func openPort(dev string) (*os.File, error) {
	if dev == "" {
		dev = "/dev/port"
	}
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dev, err)
	}
	return f, nil
}
