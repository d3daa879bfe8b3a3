package dataport

import (
	"errors"
	"testing"

	"github.com/safchain/ethtool"
	"golang.org/x/sys/unix"
)

// fakeNIC is a driver: features it lets change, features fixed, pause and
// private flags.
type fakeNIC struct {
	features map[string]ethtool.FeatureState
	pause    *ethtool.Pause // nil: no flow control
	sticky   bool           // SetPause is accepted and changes nothing
	flags    map[string]bool
	ignore   map[string]bool // private flags that do not change
}

func (f *fakeNIC) FeaturesWithState(string) (map[string]ethtool.FeatureState, error) {
	out := map[string]ethtool.FeatureState{}
	for k, v := range f.features {
		out[k] = v
	}
	return out, nil
}

func (f *fakeNIC) Change(_ string, c map[string]bool) error {
	for k, v := range c {
		s := f.features[k]
		if s.Available { // as the kernel: changes only what the driver offers
			s.Active = v
			f.features[k] = s
		}
	}
	return nil
}

func (f *fakeNIC) GetPause(string) (ethtool.Pause, error) {
	if f.pause == nil {
		return ethtool.Pause{}, unix.EOPNOTSUPP
	}
	return *f.pause, nil
}

func (f *fakeNIC) SetPause(_ string, p ethtool.Pause) (ethtool.Pause, error) {
	if f.pause == nil {
		return p, unix.EOPNOTSUPP
	}
	if !f.sticky {
		*f.pause = p
	}
	return p, nil
}

func (f *fakeNIC) PrivFlags(string) (map[string]bool, error) {
	if f.flags == nil {
		return nil, unix.EOPNOTSUPP
	}
	out := map[string]bool{}
	for k, v := range f.flags {
		out[k] = v
	}
	return out, nil
}

func (f *fakeNIC) UpdatePrivFlags(_ string, c map[string]bool) error {
	for k, v := range c {
		if f.ignore[k] {
			return errors.New("operation not permitted")
		}
		f.flags[k] = v
	}
	return nil
}

func results(ss []Setting) map[string]string {
	out := map[string]string{}
	for _, s := range ss {
		out[s.Name] = s.Result + "/" + s.Got
	}
	return out
}

func TestConfigure(t *testing.T) {
	on := ethtool.FeatureState{Available: true, Active: true}
	for _, tc := range []struct {
		name   string
		nic    *fakeNIC
		want   Want
		result map[string]string
		strips []string
	}{
		{
			name: "82599: strip and filter on, pause negotiated, no LLDP agent",
			nic: &fakeNIC{
				features: map[string]ethtool.FeatureState{"rx-vlan-hw-parse": on, "rx-vlan-filter": on},
				pause:    &ethtool.Pause{Autoneg: 1, RxPause: 1, TxPause: 1},
			},
			result: map[string]string{
				"rx-vlan-hw-parse": "set/off", "rx-vlan-stag-hw-parse": "not_offered/",
				"rx-vlan-filter": "set/off", "rx-vlan-stag-filter": "not_offered/",
				"pause": "set/off", "fw-lldp": "not_offered/",
			},
		},
		{
			name: "i40e: LLDP agent on, pause off already",
			nic: &fakeNIC{
				features: map[string]ethtool.FeatureState{"rx-vlan-hw-parse": on, "rx-vlan-stag-hw-parse": {Active: false}},
				pause:    &ethtool.Pause{},
				flags:    map[string]bool{"disable-fw-lldp": false, "link-down-on-close": false},
			},
			result: map[string]string{
				"rx-vlan-hw-parse": "set/off", "rx-vlan-stag-hw-parse": "not_offered/",
				"pause": "already/off", "disable-fw-lldp": "set/on",
			},
		},
		{
			name: "ice: agent cannot be stopped, stag stripping fixed on",
			nic: &fakeNIC{
				features: map[string]ethtool.FeatureState{"rx-vlan-stag-hw-parse": {Active: true}},
				pause:    &ethtool.Pause{RxPause: 1},
				sticky:   true,
				flags:    map[string]bool{"fw-lldp-agent": true},
				ignore:   map[string]bool{"fw-lldp-agent": true},
			},
			result: map[string]string{
				"rx-vlan-hw-parse": "not_offered/", "rx-vlan-stag-hw-parse": "refused/on",
				"pause": "refused/on", "fw-lldp-agent": "refused/on",
			},
			strips: []string{"rx-vlan-stag-hw-parse"},
		},
		{
			name: "flow control asked for: left as negotiated",
			nic: &fakeNIC{
				features: map[string]ethtool.FeatureState{},
				pause:    &ethtool.Pause{Autoneg: 1, RxPause: 1},
			},
			want:   Want{FlowControl: true},
			result: map[string]string{"pause": "already/on"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := configure(tc.nic, "eth1", tc.want)
			res := results(got)
			for k, want := range tc.result {
				if res[k] != want {
					t.Errorf("%s: got %q, want %q (all: %v)", k, res[k], want, got)
				}
			}
			strips := Strips(got)
			if len(strips) != len(tc.strips) || (len(strips) > 0 && strips[0] != tc.strips[0]) {
				t.Errorf("Strips = %v, want %v", strips, tc.strips)
			}
			// What Configure said it set, the driver now has.
			for _, s := range got {
				if s.Result == SettingSet && s.Got != s.Want {
					t.Errorf("%s reported set but reads back %q", s.Name, s.Got)
				}
			}
		})
	}
}
