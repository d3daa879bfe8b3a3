package bypass

import (
	"fmt"

	"github.com/ncpos/ncpos/config"
)

// smbusDev is SMBus byte-data access to one controller address.
type smbusDev interface {
	ReadByteData(cmd byte) (byte, error)
	WriteByteData(cmd, v byte) error
	Close() error
}

// smbusSpace is a bypass controller's registers (SMBus commands) at one
// address, for controllers whose byte-data register map an operator
// fills in (Lanner's Gen 3 modules have their own backend).
type smbusSpace struct {
	dev  smbusDev
	name string
}

func (s *smbusSpace) describe() string { return s.name }
func (s *smbusSpace) begin() error     { return nil }
func (s *smbusSpace) end() error       { return nil }
func (s *smbusSpace) read(_, reg int) (byte, error) {
	return s.dev.ReadByteData(byte(reg))
}
func (s *smbusSpace) write(_, reg int, v byte) error {
	return s.dev.WriteByteData(byte(reg), v)
}
func (s *smbusSpace) close() error { return s.dev.Close() }

func newSMBus(dev smbusDev, cfg config.SMBus, m config.RegisterMap) (*regBackend, error) {
	sp := &smbusSpace{dev: dev, name: fmt.Sprintf("smbus i2c-%d@%#02x", cfg.Bus, cfg.Address)}
	return newRegBackend("smbus", sp, m)
}

// boundDev is one address of an adapter, as the register map backend
// talks to its controller.
type boundDev struct {
	a    *i2cAdapter
	addr byte
}

// openI2C opens /dev/i2c-<bus> for the controller at addr; force takes
// the address even if a kernel driver has claimed it.
func openI2C(bus, addr int, force bool) (*boundDev, error) {
	a, err := openAdapter(bus, force)
	if err != nil {
		return nil, err
	}
	if err := a.bind(byte(addr)); err != nil {
		a.Close()
		return nil, err
	}
	return &boundDev{a: a, addr: byte(addr)}, nil
}

func (d *boundDev) ReadByteData(cmd byte) (byte, error) { return d.a.ReadByteData(d.addr, cmd) }
func (d *boundDev) WriteByteData(cmd, v byte) error     { return d.a.WriteByteData(d.addr, cmd, v) }
func (d *boundDev) Close() error                        { return d.a.Close() }
