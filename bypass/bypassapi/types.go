// Package bypassapi is bypassd's contract: the states, events and
// capabilities of a bypass relay, what bypassd reports on its unix socket,
// the overrides and planned bypasses it takes, and the Client every caller
// asks bypassd with.
package bypassapi

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is what a bypass relay does with its two ports.
type State string

const (
	// Normal: each port is connected to its NIC; traffic goes through the
	// forwarder.
	Normal State = "normal"
	// Bypass: the relay connects the two ports' cables directly; the NICs
	// are cut off. A relay without power rests here.
	Bypass State = "bypass"
	// Disconnect: both ports open, nothing passes (to force the far ends'
	// redundancy to take over). Holding it needs power.
	Disconnect State = "disconnect"
	// Unknown: the state could not be read.
	Unknown State = "unknown"
)

// States are the settable states, in a fixed order.
var States = []State{Normal, Bypass, Disconnect}

// StateNames are the words of states, in their order, for lists in
// messages and for checking names.
func StateNames(states []State) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = string(st)
	}
	return out
}

// ParseState parses a state name.
func ParseState(s string) (State, error) {
	st := State(s)
	if slices.Contains(States, st) {
		return st, nil
	}
	return Unknown, fmt.Errorf("unknown state %q, want normal, bypass or disconnect", s)
}

// Event is something the relay hardware reacts to by itself, with a
// default state that software may be able to choose.
type Event string

const (
	// PowerOff: the box loses its power (unplugged, or switched off
	// where the hardware tells no standby power apart).
	PowerOff Event = "power_off"
	// OSOff: the operating system shut down with standby power still
	// on (Intel's MAIN_OFF).
	OSOff Event = "os_off"
	// PowerRestore: power comes back to an unplugged box (Intel's
	// AUX_ON), before it boots.
	PowerRestore Event = "power_restore"
	// PowerUp: from the box's power-on (boot) until software sets a
	// state (Lanner's "Just-On", Intel's MAIN_ON).
	PowerUp Event = "power_up"
	// TimerExpiry: the controller's own watchdog timer ran out.
	TimerExpiry Event = "timer_expiry"
)

// Events are all events, in a fixed order: the box's life from power
// loss to boot, then the watchdog.
var Events = []Event{PowerOff, OSOff, PowerRestore, PowerUp, TimerExpiry}

// TimerCaps describes a controller watchdog timer.
type TimerCaps struct {
	Unit     time.Duration `json:"unit"` // granularity: timeouts are rounded up to a multiple (or power of two, see Notes)
	Min      time.Duration `json:"min"`
	Max      time.Duration `json:"max"`
	TimeLeft bool          `json:"time_left"` // the remaining time can be read
}

// Caps is what a relay can do, discovered from the hardware where it says
// so (bpctl) and from the profile's map otherwise. Nothing is hidden: what
// cannot be done is listed too.
type Caps struct {
	States []State `json:"states"` // run-time states it can be set to
	// Events lists, per event, the default states software can choose;
	// an event that is absent has a default that cannot be changed.
	Events map[Event][]State `json:"events,omitempty"`
	// Fixed is, per event, what the hardware does that software cannot
	// change, where known.
	Fixed map[Event]State `json:"fixed,omitempty"`
	Timer *TimerCaps      `json:"timer,omitempty"` // nil: no controller timer
	// ReadBack: the state can be read from the hardware (not just
	// remembered).
	ReadBack bool `json:"read_back"`
	// ReadBackOf says what a read-back reads, so that nobody takes a
	// latch for the contacts.
	ReadBackOf ReadBackSource `json:"read_back_of"`
	// LinkDownInBypass: in bypass the NIC ports are cut off from the
	// cables, so the forwarder sees their links down. True of every
	// hardware relay; false for sim.
	LinkDownInBypass bool     `json:"link_down_in_bypass"`
	Notes            []string `json:"notes,omitempty"`
}

// ReadBackSource is what a backend's read-back reads.
type ReadBackSource string

const (
	// ReadsRelay: the relay itself (the lab's sim relay, whose state is
	// what carries the frames).
	ReadsRelay ReadBackSource = "relay"
	// ReadsController: the state the bypass controller reports (Lanner's
	// module, Intel's bypass firmware, Silicom's driver): what it set,
	// not a sensor on the contacts.
	ReadsController ReadBackSource = "controller"
	// ReadsLatch: the register or file that was written (Super I/O GPIO,
	// I/O port, SMBus register map, driver files): it shows the output,
	// not the relay.
	ReadsLatch ReadBackSource = "latch"
	// ReadsTool: what a vendor tool prints.
	ReadsTool ReadBackSource = "tool"
	// ReadsNothing: no read-back; the state is what was last set.
	ReadsNothing ReadBackSource = "none"
)

// Can reports whether the relay can be set to s at run time.
func (c Caps) Can(s State) bool { return slices.Contains(c.States, s) }

// CanDefault reports whether the default for e can be set to s.
func (c Caps) CanDefault(e Event, s State) bool {
	return slices.Contains(c.Events[e], s)
}

// String summarises the capabilities for logs.
func (c Caps) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "states %v", c.States)
	for _, e := range Events {
		if s, ok := c.Events[e]; ok {
			fmt.Fprintf(&b, ", %s settable %v", e, s)
		} else if f, ok := c.Fixed[e]; ok {
			fmt.Fprintf(&b, ", %s fixed %s", e, f)
		} else {
			fmt.Fprintf(&b, ", %s not settable", e)
		}
	}
	if c.Timer != nil {
		fmt.Fprintf(&b, ", timer %v..%v step %v", c.Timer.Min, c.Timer.Max, c.Timer.Unit)
		if !c.Timer.TimeLeft {
			b.WriteString(" (time left unreadable)")
		}
	} else {
		b.WriteString(", no timer")
	}
	if !c.ReadBack {
		b.WriteString(", no read-back")
	} else if c.ReadBackOf != "" {
		fmt.Fprintf(&b, ", read-back of the %s", c.ReadBackOf)
	}
	return b.String()
}

// Status is bypassd's /status.
type Status struct {
	Failsafe  string       `json:"failsafe,omitempty"`
	Planned   *Planned     `json:"planned,omitempty"`
	Forwarder HealthStatus `json:"forwarder"`
	Budget    Duration     `json:"budget"`
	HoldDown  Duration     `json:"hold_down"`
	// StartHoldDown is the hold-down of a pair's first return to normal
	// after bypassd starts it in bypass (power-on).
	StartHoldDown Duration     `json:"start_hold_down"`
	Pairs         []PairStatus `json:"pairs"`
	Log           []Entry      `json:"log"`
}

// HealthStatus is the last look at the forwarder.
type HealthStatus struct {
	Healthy bool      `json:"healthy"`
	Reason  string    `json:"reason,omitempty"`
	Checked time.Time `json:"checked"`
}

// PairStatus is one pair.
type PairStatus struct {
	Name       string           `json:"name"`
	Segment    string           `json:"segment,omitempty"`
	Ports      [2]string        `json:"ports"`
	Interfaces [2]string        `json:"interfaces"`
	Backend    string           `json:"backend"`
	Problem    string           `json:"problem,omitempty"` // why it cannot be driven
	State      State            `json:"state"`             // as read back
	Desired    State            `json:"desired"`
	Cause      string           `json:"cause"`
	Since      time.Time        `json:"since"`
	Healthy    bool             `json:"forwarder_healthy"`
	Health     string           `json:"health,omitempty"`
	HoldDown   Duration         `json:"hold_down"` // in force: the start hold-down until the first normal
	HealthyFor Duration         `json:"healthy_for"`
	Override   *Override        `json:"override,omitempty"`
	Timer      *TimerStatus     `json:"timer,omitempty"`
	Defaults   map[Event]string `json:"defaults,omitempty"`
	Caps       *Caps            `json:"caps,omitempty"`
	Errors     uint64           `json:"errors"`
	LastError  string           `json:"last_error,omitempty"`
	Counts     map[State]uint64 `json:"transitions"`
}

// TimerStatus is the controller watchdog.
type TimerStatus struct {
	Armed    bool     `json:"armed"`
	Timeout  Duration `json:"timeout"`
	TimeLeft Duration `json:"time_left"`
	Unit     Duration `json:"unit"`
}

// Duration marshals as a Go duration string.
type Duration time.Duration

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Entry is one line of the transition log.
type Entry struct {
	Time  time.Time `json:"time"`
	Pair  string    `json:"pair,omitempty"`
	Kind  string    `json:"kind"` // transition, override, planned, timer, error, start, failsafe
	From  State     `json:"from,omitempty"`
	To    State     `json:"to,omitempty"`
	Cause string    `json:"cause"`
}

func (e Entry) String() string {
	s := e.Kind
	if e.Pair != "" {
		s = e.Pair + " " + s
	}
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf(" %s -> %s", e.From, e.To)
	}
	return s + ": " + e.Cause
}

// Override is a manual state set through the API.
type Override struct {
	State   State     `json:"state"`
	Reason  string    `json:"reason"`
	By      string    `json:"by,omitempty"`
	Set     time.Time `json:"set,omitzero"`
	Expires time.Time `json:"expires,omitzero"` // zero: until cleared
	// Update marks an override that ncpos update set for its reboots:
	// one still in force when the next update starts is a leftover of
	// an update whose client died, which that update ends first.
	Update bool `json:"update,omitempty"`
}

// Planned is a planned shutdown, reboot or update: bypass first.
type Planned struct {
	Kind   string    `json:"kind"` // shutdown, reboot, update or stop
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// OverrideRequest is the body of POST /override.
type OverrideRequest struct {
	Pair   string `json:"pair"`  // "" for every pair
	State  State  `json:"state"` // normal, bypass or disconnect
	Reason string `json:"reason"`
	For    string `json:"for,omitempty"`    // Go duration; "" until cleared
	By     string `json:"by,omitempty"`     // who asked (statusd passes the user)
	Update bool   `json:"update,omitempty"` // set by ncpos update (Override.Update)
}

// PlanRequest is the body of POST /planned.
type PlanRequest struct {
	Kind   string `json:"kind"` // one of PlanKinds
	Reason string `json:"reason"`
}

// What a planned bypass is for.
const (
	PlanShutdown = "shutdown"
	PlanReboot   = "reboot"
	PlanUpdate   = "update"
)

// PlanKinds are the kinds a PlanRequest may name.
var PlanKinds = []string{PlanShutdown, PlanReboot, PlanUpdate}

// Reconfigured is what bypassd did to take a new configuration in place
// (POST /reconfigure).
type Reconfigured struct {
	// Segments are the pairs whose segment changed, by pair name.
	Segments map[string]SegmentChange `json:"segments"`
	Budget   bool                     `json:"budget,omitempty"` // the budget changed
	Policy   bool                     `json:"policy,omitempty"` // a hold-down or its damping changed
}

// SegmentChange is a pair's segment before and after ("": none).
type SegmentChange struct {
	From string `json:"from"`
	To   string `json:"to"`
}
