package forwarder

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Channels are a NIC's queue counts as ethtool -l shows them.
type Channels struct {
	MaxRx, MaxTx, MaxOther, MaxCombined uint32
	Rx, Tx, Other, Combined             uint32
}

// channelDriver reads and sets queue counts; ethtoolChannels is the real
// one, tests use a fake.
type channelDriver interface {
	Get(ifname string) (Channels, error)
	Set(ifname string, c Channels) error
}

// ethtoolChannels talks to drivers through the SIOCETHTOOL ioctl
// (ETHTOOL_GCHANNELS/SCHANNELS), the same call `ethtool -L` makes.
type ethtoolChannels struct{}

const (
	ethtoolGChannels = 0x3c
	ethtoolSChannels = 0x3d
)

type ethtoolChannelsReq struct {
	Cmd                                  uint32
	MaxRx, MaxTx, MaxOther, MaxCombined  uint32
	RxCount, TxCount, OtherCount, Combin uint32
}

type ifreqData struct {
	Name [unix.IFNAMSIZ]byte
	Data uintptr
	_    [16]byte
}

func ethtoolIoctl(ifname string, req *ethtoolChannelsReq) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.Name[:], ifname)
	ifr.Data = uintptr(unsafe.Pointer(req))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return errno
	}
	return nil
}

func (ethtoolChannels) Get(ifname string) (Channels, error) {
	req := ethtoolChannelsReq{Cmd: ethtoolGChannels}
	if err := ethtoolIoctl(ifname, &req); err != nil {
		return Channels{}, fmt.Errorf("reading channels of %s: %w", ifname, err)
	}
	return Channels{
		MaxRx: req.MaxRx, MaxTx: req.MaxTx, MaxOther: req.MaxOther, MaxCombined: req.MaxCombined,
		Rx: req.RxCount, Tx: req.TxCount, Other: req.OtherCount, Combined: req.Combin,
	}, nil
}

func (ethtoolChannels) Set(ifname string, c Channels) error {
	req := ethtoolChannelsReq{
		Cmd:     ethtoolSChannels,
		RxCount: c.Rx, TxCount: c.Tx, OtherCount: c.Other, Combin: c.Combined,
	}
	if err := ethtoolIoctl(ifname, &req); err != nil {
		return fmt.Errorf("setting channels of %s: %w", ifname, err)
	}
	return nil
}
