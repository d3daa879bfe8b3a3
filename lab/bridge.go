package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/dataport/fence"
)

// Bridge joins segment i's two forwarder ports with a Linux bridge in
// the forwarder's namespace, bridge netfilter off: the in-kernel
// reference a wire is measured against. undo removes the bridge.
func (l *Lab) Bridge(i int) (undo func() error, err error) {
	fw, seg := l.FW, l.Segments[i]
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: l.Name("br" + strconv.Itoa(i))}}
	if err := fw.nl.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("creating bridge: %w", err)
	}
	undo = func() error { return fw.nl.LinkDel(br) }
	defer func() {
		if err != nil {
			undo()
		}
	}()
	err = fw.Do(func() error {
		for _, f := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables", "bridge-nf-call-arptables"} {
			p := filepath.Join("/proc/sys/net/bridge", f)
			if err := os.WriteFile(p, []byte("0"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range seg.Ports {
		pl, err := fw.Link(p)
		if err != nil {
			return nil, err
		}
		// A forwarderd that ran on the port before left its input fence,
		// which would drop what the bridge is to receive.
		if err := fw.Do(func() error { return fence.Remove(p) }); err != nil {
			return nil, err
		}
		if err := fw.nl.LinkSetMaster(pl, br); err != nil {
			return nil, fmt.Errorf("enslaving %s: %w", p, err)
		}
	}
	if err := fw.nl.LinkSetUp(br); err != nil {
		return nil, err
	}
	return undo, nil
}
