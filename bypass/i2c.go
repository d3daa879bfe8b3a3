package bypass

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// smbusBus is a host SMBus adapter on which every transaction names its
// address, as talking to a module behind I2C switches needs.
type smbusBus interface {
	SendByte(addr, v byte) error
	WriteByteData(addr, cmd, v byte) error
	ReadByteData(addr, cmd byte) (byte, error)
	ReadWordData(addr, cmd byte) (uint16, error)
	// ReceiveByte is SMBus "receive byte": a read with no command sent,
	// the one transaction that writes nothing to the device.
	ReceiveByte(addr byte) (byte, error)
	Close() error
}

// Linux i2c-dev interface (linux/i2c-dev.h, linux/i2c.h).
const (
	i2cSlave         = 0x0703
	i2cSlaveForce    = 0x0706
	i2cSMBus         = 0x0720
	i2cSMBusRead     = 1
	i2cSMBusWrite    = 0
	i2cSMBusByte     = 1
	i2cSMBusByteData = 2
	i2cSMBusWordData = 3
)

// i2cSMBusIoctlData is struct i2c_smbus_ioctl_data.
type i2cSMBusIoctlData struct {
	readWrite uint8
	command   uint8
	_         [2]byte
	size      uint32
	data      *[34]byte // union i2c_smbus_data
}

// i2cAdapter is /dev/i2c-N. It binds the address of each transaction
// (I2C_SLAVE) when it differs from the last one's.
type i2cAdapter struct {
	f     *os.File
	path  string
	force bool
	bound int // -1: none yet
}

// openAdapter opens /dev/i2c-<bus>; force binds addresses that a kernel
// driver has claimed (I2C_SLAVE_FORCE).
func openAdapter(bus int, force bool) (*i2cAdapter, error) {
	path := fmt.Sprintf("/dev/i2c-%d", bus)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return &i2cAdapter{f: f, path: path, force: force, bound: -1}, nil
}

func (a *i2cAdapter) bind(addr byte) error {
	if a.bound == int(addr) {
		return nil
	}
	req := uintptr(i2cSlave)
	if a.force {
		req = i2cSlaveForce
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, a.f.Fd(), req, uintptr(addr)); errno != 0 {
		if errno == unix.EBUSY {
			return fmt.Errorf("%s: address %#02x is claimed by a kernel driver: %w", a.path, addr, errno)
		}
		return fmt.Errorf("%s: binding address %#02x: %w", a.path, addr, errno)
	}
	a.bound = int(addr)
	return nil
}

func (a *i2cAdapter) access(addr, rw, cmd byte, size uint32, data *[34]byte) error {
	if err := a.bind(addr); err != nil {
		return err
	}
	args := i2cSMBusIoctlData{readWrite: rw, command: cmd, size: size, data: data}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, a.f.Fd(), i2cSMBus, uintptr(unsafe.Pointer(&args))); errno != 0 {
		return errno
	}
	return nil
}

// SendByte is SMBus "send byte": the value goes in the command slot.
func (a *i2cAdapter) SendByte(addr, v byte) error {
	if err := a.access(addr, i2cSMBusWrite, v, i2cSMBusByte, nil); err != nil {
		return fmt.Errorf("%s: smbus send byte %#02x to %#02x: %w", a.path, v, addr, err)
	}
	return nil
}

func (a *i2cAdapter) ReadByteData(addr, cmd byte) (byte, error) {
	var data [34]byte
	if err := a.access(addr, i2cSMBusRead, cmd, i2cSMBusByteData, &data); err != nil {
		return 0, fmt.Errorf("%s: smbus read %#02x of %#02x: %w", a.path, cmd, addr, err)
	}
	return data[0], nil
}

func (a *i2cAdapter) WriteByteData(addr, cmd, v byte) error {
	var data [34]byte
	data[0] = v
	if err := a.access(addr, i2cSMBusWrite, cmd, i2cSMBusByteData, &data); err != nil {
		return fmt.Errorf("%s: smbus write %#02x=%#02x to %#02x: %w", a.path, cmd, v, addr, err)
	}
	return nil
}

func (a *i2cAdapter) ReadWordData(addr, cmd byte) (uint16, error) {
	var data [34]byte
	if err := a.access(addr, i2cSMBusRead, cmd, i2cSMBusWordData, &data); err != nil {
		return 0, fmt.Errorf("%s: smbus read word %#02x of %#02x: %w", a.path, cmd, addr, err)
	}
	return binary.LittleEndian.Uint16(data[:2]), nil
}

func (a *i2cAdapter) ReceiveByte(addr byte) (byte, error) {
	var data [34]byte
	if err := a.access(addr, i2cSMBusRead, 0, i2cSMBusByte, &data); err != nil {
		return 0, fmt.Errorf("%s: smbus receive byte from %#02x: %w", a.path, addr, err)
	}
	return data[0], nil
}

func (a *i2cAdapter) Close() error { return a.f.Close() }

// findAdapter returns the number of the one I2C adapter whose sysfs name
// (<sys>/bus/i2c/devices/i2c-N/name) begins with prefix.
func findAdapter(sys, prefix string) (int, error) {
	dir := filepath.Join(sys, "bus", "i2c", "devices")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("listing I2C adapters: %w", err)
	}
	var found []int
	var names []string
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "i2c-")
		if !ok {
			continue
		}
		bus, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "name"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(b))
		names = append(names, fmt.Sprintf("i2c-%d %q", bus, name))
		if strings.HasPrefix(name, prefix) {
			found = append(found, bus)
		}
	}
	slices.Sort(found)
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return 0, fmt.Errorf("%d I2C adapters are named %q (%v): give the bus in the profile", len(found), prefix, found)
	case len(names) == 0:
		return 0, fmt.Errorf("no I2C adapter in %s: no SMBus controller was found (disabled in the firmware setup?)", dir)
	}
	slices.Sort(names)
	return 0, fmt.Errorf("no I2C adapter named %q (there are %s)", prefix, strings.Join(names, ", "))
}
