package forwarder

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// XDPFeatures are a driver's XDP feature flags (enum netdev_xdp_act of
// linux/netdev.h), as the kernel reports them over the netdev generic
// netlink family (kernel 6.3 and later).
type XDPFeatures uint64

// The flags ncpos decides on.
const (
	XDPBasic     XDPFeatures = 1 << 0 // XDP programs run in the driver
	XDPRedirect  XDPFeatures = 1 << 1 // the driver redirects
	XDPNdoXmit   XDPFeatures = 1 << 2 // the driver transmits frames redirected into it
	XDPZeroCopy  XDPFeatures = 1 << 3 // AF_XDP zero copy
	XDPRxSG      XDPFeatures = 1 << 5 // frames in several buffers (jumbo) on receive
	XDPNdoXmitSG XDPFeatures = 1 << 6 // ... and on transmit
)

var xdpFeatureNames = []struct {
	f    XDPFeatures
	name string
}{
	{XDPBasic, "basic"}, {XDPRedirect, "redirect"}, {XDPNdoXmit, "ndo-xmit"}, {XDPZeroCopy, "xsk-zerocopy"},
	{1 << 4, "hw-offload"}, {XDPRxSG, "rx-sg"}, {XDPNdoXmitSG, "ndo-xmit-sg"},
}

// Names lists the flags set, as ynl names them.
func (f XDPFeatures) Names() []string {
	out := []string{}
	for _, n := range xdpFeatureNames {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

func (f XDPFeatures) String() string { return strings.Join(f.Names(), ",") }

// netdev generic netlink family (linux/netdev.h).
const (
	netdevCmdDevGet      = 1
	netdevAttrIfindex    = 1
	netdevAttrXDPFeature = 3
)

// readXDPFeatures asks the kernel for ifindex's XDP features. ok is false
// on kernels without the netdev family.
func readXDPFeatures(ifindex int) (f XDPFeatures, ok bool, err error) {
	fam, err := netlink.GenlFamilyGet("netdev")
	if err != nil {
		return 0, false, nil
	}
	req := nl.NewNetlinkRequest(int(fam.ID), 0)
	req.AddData(genlHeader{netdevCmdDevGet, 1})
	req.AddData(nl.NewRtAttr(netdevAttrIfindex, nl.Uint32Attr(uint32(ifindex))))
	msgs, err := req.Execute(unix.NETLINK_GENERIC, 0)
	if err != nil {
		return 0, true, fmt.Errorf("reading XDP features of ifindex %d: %w", ifindex, err)
	}
	for _, m := range msgs {
		if len(m) < nl.SizeofGenlmsg {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofGenlmsg:])
		if err != nil {
			return 0, true, fmt.Errorf("parsing XDP features of ifindex %d: %w", ifindex, err)
		}
		for _, a := range attrs {
			if a.Attr.Type == netdevAttrXDPFeature && len(a.Value) == 8 {
				return XDPFeatures(binary.NativeEndian.Uint64(a.Value)), true, nil
			}
		}
	}
	return 0, true, fmt.Errorf("ifindex %d: the kernel's answer has no XDP features", ifindex)
}

// genlHeader is a generic netlink header with its reserved bytes zero:
// the netdev family validates strictly, and nl.Genlmsg serializes two bytes
// past its struct.
type genlHeader struct{ cmd, version uint8 }

func (h genlHeader) Len() int          { return nl.SizeofGenlmsg }
func (h genlHeader) Serialize() []byte { return []byte{h.cmd, h.version, 0, 0} }

// attachPlan is how one port's program is attached, and why.
type attachPlan struct {
	mode string // XDPNative, XDPGeneric, or XDPAuto when the features are unknown
	why  string
	// checkPeer: native on the promise of a peer driver that can
	// transmit redirected frames only while its own program is attached
	// (igb, ixgbe, ice: their XDP transmit rings exist only then), to be
	// checked once it is.
	checkPeer bool
}

// planAttach chooses each port's attach mode from the features of it and
// its peer. A native program redirects through the peer driver's XDP
// transmit: into a driver without one (upstream e1000e, many onboard
// NICs), every frame would be dropped, so such a direction runs generic.
// Frames longer than one buffer need multi-buffer support on receive and
// on the peer's transmit. want is the configured mode: auto chooses; native refuses a
// port that cannot run natively, with the reason; generic is generic.
// trustPeer allows a plan on the peer's promise (see checkPeer): only
// when the peer is itself to run native, as a driver attached generic
// never offers its transmit.
func planAttach(want string, me, peer XDPFeatures, known bool, peerName string, multiBuffer, trustPeer bool) (attachPlan, error) {
	if want == XDPGeneric {
		return attachPlan{mode: XDPGeneric, why: "configured"}, nil
	}
	if !known {
		// No feature flags (kernel before 6.3): try native, as before.
		return attachPlan{mode: want, why: "the kernel reports no XDP features"}, nil
	}
	// A peer whose driver redirects natively may offer its transmit only
	// once its own program is attached: that is checked after attaching.
	// A driver that offers it already gains nothing more by attaching.
	promise := trustPeer && peer&XDPBasic != 0 && peer&XDPRedirect != 0 && peer&XDPNdoXmit == 0
	var why string
	switch {
	case me&XDPBasic == 0 || me&XDPRedirect == 0:
		why = "its driver has no native XDP redirect"
	case peer&XDPNdoXmit == 0 && !promise:
		why = fmt.Sprintf("the peer %s's driver cannot transmit redirected frames (no ndo-xmit)", peerName)
	case multiBuffer && me&XDPRxSG == 0:
		why = "its driver cannot receive frames in several buffers at this MTU (no rx-sg)"
	case multiBuffer && peer&XDPNdoXmitSG == 0 && !promise:
		why = fmt.Sprintf("the peer %s's driver cannot transmit frames in several buffers at this MTU (no ndo-xmit-sg)", peerName)
	}
	if why == "" {
		if peer&XDPNdoXmit == 0 || (multiBuffer && peer&XDPNdoXmitSG == 0) {
			return attachPlan{mode: XDPNative, why: "the driver and its peer's support native redirect", checkPeer: true}, nil
		}
		return attachPlan{mode: XDPNative, why: "the driver and its peer's support native redirect"}, nil
	}
	if want == XDPNative {
		return attachPlan{}, fmt.Errorf("cannot run natively: %s (use xdp mode auto or generic)", why)
	}
	return attachPlan{mode: XDPGeneric, why: why}, nil
}

// peerKept says whether a direction planned native on its peer's promise
// (checkPeer) can stay native, now that the peer's program is attached:
// the peer's features as read now, and why not.
func peerKept(peer XDPFeatures, peerName string, multiBuffer bool) (bool, string) {
	switch {
	case peer&XDPNdoXmit == 0:
		return false, fmt.Sprintf("the peer %s's driver cannot transmit redirected frames, even with its program attached (no ndo-xmit)", peerName)
	case multiBuffer && peer&XDPNdoXmitSG == 0:
		return false, fmt.Sprintf("the peer %s's driver cannot transmit frames in several buffers at this MTU, even with its program attached (no ndo-xmit-sg)", peerName)
	}
	return true, ""
}
