package dataport

import (
	"errors"
	"fmt"

	"github.com/safchain/ethtool"
	"golang.org/x/sys/unix"
)

// Want is what Configure asks of a port.
type Want struct {
	// FlowControl leaves 802.3x PAUSE on. Off by default: with RX flow
	// control on, the MAC obeys (and consumes) a neighbour's PAUSE frames,
	// so anyone on a data port could stall the port's transmit at will, and
	// a wire carries PAUSE frames instead of acting on them.
	FlowControl bool
}

// offFeatures are the offloads that change frames before XDP sees them.
// With VLAN stripping on (ixgbe, i40e, ice, igb, e1000e) the outer tag is
// moved into the receive descriptor, so a redirected frame would leave
// without it; a VLAN filter drops tags nobody registered.
var offFeatures = []string{
	"rx-vlan-hw-parse",      // 802.1Q tag stripping (ethtool's rxvlan)
	"rx-vlan-stag-hw-parse", // 802.1ad tag stripping
	"rx-vlan-filter",        // 802.1Q filtering
	"rx-vlan-stag-filter",   // 802.1ad filtering
}

// Features whose refusal changes frames (not only which are dropped).
var stripping = map[string]bool{"rx-vlan-hw-parse": true, "rx-vlan-stag-hw-parse": true}

// lldpFlags are the private flags of drivers whose firmware runs an LLDP
// agent that consumes LLDP frames before the host sees them, and the value
// that turns the agent off: i40e's disable-fw-lldp, ice's fw-lldp-agent.
var lldpFlags = []struct {
	name string
	off  bool
}{
	{"disable-fw-lldp", true},
	{"fw-lldp-agent", false},
}

// nic is what Configure needs of ethtool; *ethtool.Ethtool has it.
type nic interface {
	FeaturesWithState(intf string) (map[string]ethtool.FeatureState, error)
	Change(intf string, config map[string]bool) error
	GetPause(intf string) (ethtool.Pause, error)
	SetPause(intf string, pause ethtool.Pause) (ethtool.Pause, error)
	PrivFlags(intf string) (map[string]bool, error)
	UpdatePrivFlags(intf string, config map[string]bool) error
}

// Setting is one setting of a data port, as its driver read it back:
// what forwarderd reports of the port (forwarderapi.PortSetting has the
// same fields).
type Setting struct {
	Name   string `json:"name"` // ethtool's name: rx-vlan-hw-parse, pause, disable-fw-lldp, …
	Want   string `json:"want"` // "off" or "on"
	Got    string `json:"got"`  // as read back; "" when the driver does not offer it
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// The results of a Setting.
const (
	SettingSet        = "set"         // changed, and read back as wanted
	SettingAlready    = "already"     // was as wanted
	SettingNotOffered = "not_offered" // the driver has no such thing: nothing to change
	SettingRefused    = "refused"     // the driver keeps it otherwise (fixed, or the change failed)
)

// Configure makes the settings on ifname and returns each as read back.
// It does not fail: a driver that refuses a setting is reported, and
// Strips tells whether the port would alter frames because of it.
func Configure(ifname string, w Want) []Setting {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return []Setting{{Name: "ethtool", Result: SettingRefused, Detail: fmt.Sprintf("ethtool socket: %v", err)}}
	}
	defer e.Close()
	return configure(e, ifname, w)
}

func configure(e nic, ifname string, w Want) []Setting {
	var out []Setting
	out = append(out, features(e, ifname)...)
	out = append(out, pause(e, ifname, w.FlowControl))
	out = append(out, lldp(e, ifname)...)
	return out
}

// Strips reports the settings whose refusal makes the port alter frames
// (a VLAN tag stripped that XDP never sees).
func Strips(settings []Setting) []string {
	var out []string
	for _, s := range settings {
		if s.Result == SettingRefused && stripping[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func features(e nic, ifname string) []Setting {
	var out []Setting
	for _, name := range offFeatures {
		st := Setting{Name: name, Want: "off"}
		fs, err := e.FeaturesWithState(ifname)
		f, ok := fs[name]
		switch {
		case err != nil:
			st.Result, st.Detail = SettingRefused, fmt.Sprintf("reading features: %v", err)
		case !ok || (!f.Available && !f.Active):
			st.Result = SettingNotOffered
		case !f.Active:
			st.Got, st.Result = "off", SettingAlready
		case !f.Available:
			st.Got, st.Result, st.Detail = "on", SettingRefused, "fixed on by the driver"
		default:
			err := e.Change(ifname, map[string]bool{name: false})
			fs, rerr := e.FeaturesWithState(ifname)
			st.Got = onOff(fs[name].Active)
			switch {
			case rerr != nil:
				st.Got, st.Result, st.Detail = "", SettingRefused, fmt.Sprintf("reading back: %v", rerr)
			case fs[name].Active:
				st.Result, st.Detail = SettingRefused, "still on after the change"
				if err != nil {
					st.Detail = err.Error()
				}
			default:
				st.Result = SettingSet
			}
		}
		out = append(out, st)
	}
	return out
}

func pause(e nic, ifname string, want bool) Setting {
	st := Setting{Name: "pause", Want: onOff(want)}
	p, err := e.GetPause(ifname)
	if errors.Is(err, unix.EOPNOTSUPP) {
		st.Result = SettingNotOffered
		return st
	}
	if err != nil {
		st.Result, st.Detail = SettingRefused, fmt.Sprintf("reading flow control: %v", err)
		return st
	}
	describe := func(p ethtool.Pause) string {
		return fmt.Sprintf("autoneg %s rx %s tx %s", onOff(p.Autoneg != 0), onOff(p.RxPause != 0), onOff(p.TxPause != 0))
	}
	on := func(p ethtool.Pause) bool { return p.RxPause != 0 || p.TxPause != 0 }
	if want {
		// Left as the driver and the link partner negotiated it.
		st.Got, st.Result, st.Detail = onOff(on(p)), SettingAlready, describe(p)
		return st
	}
	if !on(p) && p.Autoneg == 0 {
		st.Got, st.Result, st.Detail = "off", SettingAlready, describe(p)
		return st
	}
	_, serr := e.SetPause(ifname, ethtool.Pause{})
	p, err = e.GetPause(ifname)
	switch {
	case err != nil:
		st.Result, st.Detail = SettingRefused, fmt.Sprintf("reading back flow control: %v", err)
	case on(p):
		st.Got, st.Result, st.Detail = "on", SettingRefused, describe(p)
		if serr != nil {
			st.Detail += ": " + serr.Error()
		}
	default:
		st.Got, st.Result, st.Detail = "off", SettingSet, describe(p)
	}
	return st
}

func lldp(e nic, ifname string) []Setting {
	flags, err := e.PrivFlags(ifname)
	if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return []Setting{{Name: "fw-lldp", Want: "off", Result: SettingRefused, Detail: fmt.Sprintf("reading private flags: %v", err)}}
	}
	var out []Setting
	for _, f := range lldpFlags {
		cur, ok := flags[f.name]
		if !ok {
			continue
		}
		st := Setting{Name: f.name, Want: onOff(f.off)}
		if cur == f.off {
			st.Got, st.Result = onOff(cur), SettingAlready
			out = append(out, st)
			continue
		}
		uerr := e.UpdatePrivFlags(ifname, map[string]bool{f.name: f.off})
		now, err := e.PrivFlags(ifname)
		switch {
		case err != nil:
			st.Result, st.Detail = SettingRefused, fmt.Sprintf("reading back: %v", err)
		case now[f.name] != f.off:
			st.Got, st.Result = onOff(now[f.name]), SettingRefused
			if uerr != nil {
				st.Detail = uerr.Error()
			}
		default:
			st.Got, st.Result = onOff(now[f.name]), SettingSet
		}
		out = append(out, st)
	}
	if len(out) == 0 {
		out = append(out, Setting{Name: "fw-lldp", Want: "off", Result: SettingNotOffered})
	}
	return out
}
