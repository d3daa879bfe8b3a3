package bypass

import (
	"fmt"

	"github.com/ncpos/ncpos/config"
)

// ioportSpace is relay registers that are plain I/O ports (such as 0x8e3
// and 0x8e7 on some boards): the map's register numbers are port
// addresses. The registers must read back what was written for the
// read-modify-writes and the read-back to work.
type ioportSpace struct {
	io portIO
}

func (s *ioportSpace) describe() string              { return "ioport" }
func (s *ioportSpace) begin() error                  { return nil }
func (s *ioportSpace) end() error                    { return nil }
func (s *ioportSpace) read(_, reg int) (byte, error) { return inb(s.io, reg) }
func (s *ioportSpace) write(_, reg int, v byte) error {
	return outb(s.io, reg, v)
}

func (s *ioportSpace) close() error {
	if c, ok := s.io.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// newIOPort drives a relay on I/O-port registers through io (normally
// /dev/port).
func newIOPort(io portIO, m config.RegisterMap) (*regBackend, error) {
	b, err := newRegBackend("ioport", &ioportSpace{io: io}, m)
	if err != nil {
		return nil, fmt.Errorf("ioport: %w", err)
	}
	return b, nil
}
