package lab

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setGRO switches generic receive offload on an interface of the calling
// thread's namespace (ETHTOOL_SGRO). A veth with GRO on accepts frames
// redirected into it by XDP even without an XDP program of its own, which
// the Linux bridge measurement needs.
func setGRO(ifname string, on bool) error {
	return ethtoolSetValue(ifname, 0x2c, on) // ETHTOOL_SGRO
}

// setTxChecksum switches transmit checksum offload. A veth leaves the
// checksum of locally sent packets to "the hardware", which on veth is the
// skb's metadata; XDP forwarding carries bare frames, so a stack that sends
// into the lab must compute checksums itself.
func setTxChecksum(ifname string, on bool) error {
	return ethtoolSetValue(ifname, 0x17, on) // ETHTOOL_STXCSUM
}

// ethtoolSetValue issues a legacy ethtool set command taking a value.
func ethtoolSetValue(ifname string, cmd uint32, on bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	val := struct{ cmd, data uint32 }{cmd: cmd}
	if on {
		val.data = 1
	}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], ifname)
	ifr.data = uintptr(unsafe.Pointer(&val))
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return fmt.Errorf("lab: ethtool command %#x on %s: %w", cmd, ifname, errno)
	}
	return nil
}
