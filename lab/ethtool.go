package lab

import (
	"fmt"
	"strings"

	"github.com/safchain/ethtool"
)

// setGRO switches generic receive offload on an interface of the calling
// thread's namespace. A veth with GRO on accepts frames redirected into it
// by XDP even without an XDP program of its own, which the Linux bridge
// measurement needs.
func setGRO(ifname string, on bool) error {
	return setFeatures(ifname, on, func(name string) bool { return name == "rx-gro" })
}

// setTxChecksum switches transmit checksum offload. A veth leaves the
// checksum of locally sent packets to "the hardware", which on veth is the
// skb's metadata; XDP forwarding carries bare frames, so a stack that sends
// into the lab must compute checksums itself.
func setTxChecksum(ifname string, on bool) error {
	return setFeatures(ifname, on, func(name string) bool { return strings.HasPrefix(name, "tx-checksum") })
}

// setFeatures switches every offload of ifname whose ethtool name matches
// (ETHTOOL_SFEATURES, as `ethtool -K` does), in the calling thread's
// namespace.
func setFeatures(ifname string, on bool, match func(name string) bool) error {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return fmt.Errorf("lab: ethtool socket: %w", err)
	}
	defer e.Close()
	names, err := e.FeatureNames(ifname)
	if err != nil {
		return fmt.Errorf("lab: features of %s: %w", ifname, err)
	}
	want := map[string]bool{}
	for n := range names {
		if match(n) {
			want[n] = on
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("lab: %s has no such offload", ifname)
	}
	if err := e.Change(ifname, want); err != nil {
		return fmt.Errorf("lab: setting %v on %s: %w", want, ifname, err)
	}
	return nil
}
