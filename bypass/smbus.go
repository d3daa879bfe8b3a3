package bypass

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/config"
)

// smbusDev is SMBus byte-data access to one controller address.
type smbusDev interface {
	ReadByteData(cmd byte) (byte, error)
	WriteByteData(cmd, v byte) error
	Close() error
}

// smbusSpace is a bypass controller's registers (SMBus commands) at one
// address (Lanner Gen3-style modules: run-time, power-up and system-off
// bypass and a bypass watchdog in a handful of registers).
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

// Linux i2c-dev interface (linux/i2c-dev.h, linux/i2c.h).
const (
	i2cSlave         = 0x0703
	i2cSlaveForce    = 0x0706
	i2cSMBus         = 0x0720
	i2cSMBusRead     = 1
	i2cSMBusWrite    = 0
	i2cSMBusByteData = 2
)

// i2cSMBusIoctlData is struct i2c_smbus_ioctl_data.
type i2cSMBusIoctlData struct {
	readWrite uint8
	command   uint8
	_         [2]byte
	size      uint32
	data      *[34]byte // union i2c_smbus_data
}

// i2cFile is /dev/i2c-N bound to one address.
type i2cFile struct {
	f *os.File
}

// openI2C opens /dev/i2c-<bus> and binds it to addr; force takes the
// address even if a kernel driver has claimed it.
func openI2C(bus, addr int, force bool) (*i2cFile, error) {
	path := fmt.Sprintf("/dev/i2c-%d", bus)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	req := uintptr(i2cSlave)
	if force {
		req = i2cSlaveForce
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, uintptr(addr)); errno != 0 {
		f.Close()
		return nil, fmt.Errorf("%s: binding address %#02x: %w", path, addr, errno)
	}
	return &i2cFile{f: f}, nil
}

func (d *i2cFile) access(rw, cmd uint8, data *[34]byte) error {
	args := i2cSMBusIoctlData{readWrite: rw, command: cmd, size: i2cSMBusByteData, data: data}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, d.f.Fd(), i2cSMBus, uintptr(unsafe.Pointer(&args))); errno != 0 {
		return errno
	}
	return nil
}

func (d *i2cFile) ReadByteData(cmd byte) (byte, error) {
	var data [34]byte
	if err := d.access(i2cSMBusRead, cmd, &data); err != nil {
		return 0, fmt.Errorf("smbus read %#02x: %w", cmd, err)
	}
	return data[0], nil
}

func (d *i2cFile) WriteByteData(cmd, v byte) error {
	var data [34]byte
	data[0] = v
	if err := d.access(i2cSMBusWrite, cmd, &data); err != nil {
		return fmt.Errorf("smbus write %#02x=%#02x: %w", cmd, v, err)
	}
	return nil
}

func (d *i2cFile) Close() error { return d.f.Close() }
