package forwarder

import (
	"strings"
	"testing"
)

func TestPlanAttach(t *testing.T) {
	const (
		// ixgbe and i40e as they read with their programs attached.
		ixgbe  = XDPBasic | XDPRedirect | XDPNdoXmit | XDPZeroCopy
		i40e   = ixgbe | XDPRxSG | XDPNdoXmitSG
		e1000e = XDPFeatures(0) // upstream e1000e: no native XDP at all
		// igb before its program is attached: its XDP transmit rings,
		// and the ndo-xmit flag, come with the program.
		igb = XDPBasic | XDPRedirect
	)
	for _, tc := range []struct {
		name      string
		want      string
		me, peer  XDPFeatures
		known     bool
		jumbo     bool
		mode, why string // why: a word the reason must contain
		check     bool   // native on the peer's promise
		distrust  bool   // the peer itself runs generic: no promise
		err       string
	}{
		{"two ixgbe", XDPAuto, ixgbe, ixgbe, true, false, XDPNative, "native", false, false, ""},
		{"two igb, before attaching", XDPAuto, igb, igb, true, false, XDPNative, "native", true, false, ""},
		{"two igb, native asked", XDPNative, igb, igb, true, false, XDPNative, "native", true, false, ""},
		{"e1000e itself", XDPAuto, e1000e, ixgbe, true, false, XDPGeneric, "no native", false, false, ""},
		{"into an e1000e", XDPAuto, ixgbe, e1000e, true, false, XDPGeneric, "ndo-xmit", false, false, ""},
		{"into an e1000e, native asked", XDPNative, ixgbe, e1000e, true, false, "", "", false, false, "cannot run natively: the peer LAN2's driver cannot transmit"},
		{"jumbo on ixgbe", XDPAuto, ixgbe, ixgbe, true, true, XDPGeneric, "rx-sg", false, false, ""},
		{"jumbo on i40e", XDPAuto, i40e, i40e, true, true, XDPNative, "native", false, false, ""},
		{"jumbo into ixgbe", XDPAuto, i40e, ixgbe, true, true, XDPGeneric, "ndo-xmit-sg", false, false, ""},
		{"jumbo into igb before attaching", XDPAuto, i40e, igb, true, true, XDPNative, "native", true, false, ""},
		{"jumbo into ixgbe, which runs generic", XDPAuto, i40e, ixgbe, true, true, XDPGeneric, "ndo-xmit-sg", false, true, ""},
		{"two igb, one of them generic", XDPAuto, igb, igb, true, false, XDPGeneric, "ndo-xmit", false, true, ""},
		{"generic asked", XDPGeneric, i40e, i40e, true, false, XDPGeneric, "configured", false, false, ""},
		{"old kernel", XDPAuto, 0, 0, false, false, XDPAuto, "no XDP features", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planAttach(tc.want, tc.me, tc.peer, tc.known, "LAN2", tc.jumbo, !tc.distrust)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.mode != tc.mode || !strings.Contains(p.why, tc.why) || p.checkPeer != tc.check {
				t.Errorf("plan = %+v, want mode %s because of %q, checked after attaching %v", p, tc.mode, tc.why, tc.check)
			}
		})
	}
}

// TestPeerKept: a direction planned native on its peer's promise stays
// native only if the peer, its program attached, transmits redirected
// frames (in several buffers, at a jumbo MTU).
func TestPeerKept(t *testing.T) {
	igbAttached := XDPBasic | XDPRedirect | XDPNdoXmit | XDPNdoXmitSG
	ixgbeAttached := XDPBasic | XDPRedirect | XDPNdoXmit
	vethNoFarXDP := XDPBasic | XDPRedirect // its far end has neither XDP nor GRO
	for _, tc := range []struct {
		name  string
		peer  XDPFeatures
		jumbo bool
		kept  bool
		why   string
	}{
		{"igb with its program", igbAttached, false, true, ""},
		{"veth whose far end takes nothing", vethNoFarXDP, false, false, "even with its program attached (no ndo-xmit)"},
		{"jumbo into ixgbe", ixgbeAttached, true, false, "(no ndo-xmit-sg)"},
		{"ixgbe at 1500", ixgbeAttached, false, true, ""},
	} {
		kept, why := peerKept(tc.peer, "LAN2", tc.jumbo)
		if kept != tc.kept || !strings.Contains(why, tc.why) {
			t.Errorf("%s: kept %v (%s), want %v (%s)", tc.name, kept, why, tc.kept, tc.why)
		}
	}
}

func TestXDPFeatureNames(t *testing.T) {
	if got := (XDPBasic | XDPRedirect | XDPNdoXmitSG).String(); got != "basic,redirect,ndo-xmit-sg" {
		t.Errorf("names = %q", got)
	}
}

func TestCheckFormat(t *testing.T) {
	// The format of xdp:xdp_redirect_err on Linux 6.12 and 6.18.
	format := `name: xdp_redirect_err
ID: 581
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int prog_id;	offset:8;	size:4;	signed:1;
	field:u32 act;	offset:12;	size:4;	signed:0;
	field:int ifindex;	offset:16;	size:4;	signed:1;
	field:int err;	offset:20;	size:4;	signed:1;
`
	if err := checkFormat([]byte(format), tracepointFields["xdp_redirect_err"]); err != nil {
		t.Errorf("the known layout: %v", err)
	}
	moved := strings.Replace(format, "field:int err;\toffset:20", "field:int err;\toffset:24", 1)
	if err := checkFormat([]byte(moved), tracepointFields["xdp_redirect_err"]); err == nil || !strings.Contains(err.Error(), "err at offset 24") {
		t.Errorf("a moved field: %v", err)
	}
	if err := checkFormat([]byte(format), map[string]int{"from_ifindex": 8, "drops": 20}); err == nil || !strings.Contains(err.Error(), "no field") {
		t.Errorf("another event's fields: %v", err)
	}
}
