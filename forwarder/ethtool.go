package forwarder

import (
	"fmt"

	"github.com/safchain/ethtool"
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
// (ETHTOOL_GCHANNELS/SCHANNELS, the calls `ethtool -l` and `-L` make), by
// way of github.com/safchain/ethtool.
type ethtoolChannels struct{}

func (ethtoolChannels) Get(ifname string) (Channels, error) {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return Channels{}, fmt.Errorf("ethtool socket: %w", err)
	}
	defer e.Close()
	c, err := e.GetChannels(ifname)
	if err != nil {
		return Channels{}, fmt.Errorf("reading channels of %s: %w", ifname, err)
	}
	return Channels{
		MaxRx: c.MaxRx, MaxTx: c.MaxTx, MaxOther: c.MaxOther, MaxCombined: c.MaxCombined,
		Rx: c.RxCount, Tx: c.TxCount, Other: c.OtherCount, Combined: c.CombinedCount,
	}, nil
}

func (ethtoolChannels) Set(ifname string, c Channels) error {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer e.Close()
	if _, err := e.SetChannels(ifname, ethtool.Channels{RxCount: c.Rx, TxCount: c.Tx, OtherCount: c.Other, CombinedCount: c.Combined}); err != nil {
		return fmt.Errorf("setting channels of %s: %w", ifname, err)
	}
	return nil
}
