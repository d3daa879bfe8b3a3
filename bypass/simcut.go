package bypass

import (
	"fmt"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// A hardware relay in bypass cuts the NIC off its cables: the forwarder
// sees both links down until the relay is back in normal. The sim relay
// emulates that when CutLinks is set. A NIC's carrier cannot be dropped
// from software on veth or virtio-net, so the cut marks both ports dormant
// (RFC 2863 operational state, IFLA_LINKMODE dormant): the kernel then
// reports them not up, exactly as the forwarder reads a link, while the tc
// relay still carries the frames between the two cables as a relay does.
// A real cable pulled meanwhile still shows as down, and comes back as
// dormant while the cut lasts.
//
// The cut follows the relay whenever bypassd sets or reads it back; a
// controller timer that expires while no bypassd runs cuts nothing until
// one looks again.

// IF_LINK_MODE_* and IF_OPER_* of include/uapi/linux/if_link.h and
// if.h.
const (
	linkModeDefault = 0
	linkModeDormant = 1
	operDormant     = 5
	operUp          = 6
)

// setCut marks the ports dormant (cut) or gives them back to their
// carrier, once per change of the relay's state.
func (s *Sim) setCut(st bypassapi.State) error {
	cut := st != bypassapi.Normal
	if s.cutKnown && s.cutApplied == cut {
		return nil
	}
	mode, oper := byte(linkModeDefault), byte(operUp)
	if cut {
		mode, oper = linkModeDormant, operDormant
	}
	for i, idx := range s.idx {
		req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Index = int32(idx)
		req.AddData(msg)
		req.AddData(nl.NewRtAttr(unix.IFLA_LINKMODE, []byte{mode}))
		req.AddData(nl.NewRtAttr(unix.IFLA_OPERSTATE, []byte{oper}))
		if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
			s.cutKnown = false
			return fmt.Errorf("sim: %s the links of %s: %w", map[bool]string{true: "cutting", false: "restoring"}[cut], s.Ifs[i], err)
		}
	}
	s.cutKnown, s.cutApplied = true, cut
	return nil
}
