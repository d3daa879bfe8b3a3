package ipc

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// RelayState is what a bypass relay does with its two ports.
type RelayState string

const (
	// Normal: each port is connected to its NIC; traffic goes through the
	// forwarder.
	RelayNormal RelayState = "normal"
	// Bypass: the relay connects the two ports' cables directly; the NICs
	// are cut off. A relay without power rests here.
	RelayBypass RelayState = "bypass"
	// Disconnect: both ports open, nothing passes (to force the far ends'
	// redundancy to take over). Holding it needs power.
	RelayDisconnect RelayState = "disconnect"
	// Unknown: the state could not be read.
	RelayUnknown RelayState = "unknown"
)

// RelayStates are the settable states, in a fixed order.
var RelayStates = []RelayState{RelayNormal, RelayBypass, RelayDisconnect}

// RelayStateNames are the words of states, in their order, for lists in
// messages and for checking names.
func RelayStateNames(states []RelayState) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = string(st)
	}
	return out
}

// ParseRelayState parses a state name.
func ParseRelayState(s string) (RelayState, error) {
	st := RelayState(s)
	if slices.Contains(RelayStates, st) {
		return st, nil
	}
	return RelayUnknown, fmt.Errorf("unknown state %q, want normal, bypass or disconnect", s)
}

// RelayEvent is something the relay hardware reacts to by itself, with a
// default state that software may be able to choose.
type RelayEvent string

const (
	// EventPowerOff: the box loses its power (unplugged, or switched off
	// where the hardware tells no standby power apart).
	EventPowerOff RelayEvent = "power_off"
	// EventOSOff: the operating system shut down with standby power still
	// on (Intel's MAIN_OFF).
	EventOSOff RelayEvent = "os_off"
	// EventPowerRestore: power comes back to an unplugged box (Intel's
	// AUX_ON), before it boots.
	EventPowerRestore RelayEvent = "power_restore"
	// EventPowerUp: from the box's power-on (boot) until software sets a
	// state (Lanner's "Just-On", Intel's MAIN_ON).
	EventPowerUp RelayEvent = "power_up"
	// EventTimerExpiry: the controller's own watchdog timer ran out.
	EventTimerExpiry RelayEvent = "timer_expiry"
)

// RelayEvents are all events, in a fixed order: the box's life from power
// loss to boot, then the watchdog.
var RelayEvents = []RelayEvent{EventPowerOff, EventOSOff, EventPowerRestore, EventPowerUp, EventTimerExpiry}

// RelayTimerCaps describes a controller watchdog timer.
type RelayTimerCaps struct {
	Unit     time.Duration `json:"unit"` // granularity: timeouts are rounded up to a multiple (or power of two, see Notes)
	Min      time.Duration `json:"min"`
	Max      time.Duration `json:"max"`
	TimeLeft bool          `json:"time_left"` // the remaining time can be read
}

// RelayCaps is what a relay can do, discovered from the hardware where it says
// so (bpctl) and from the profile's map otherwise. Nothing is hidden: what
// cannot be done is listed too.
type RelayCaps struct {
	States []RelayState `json:"states"` // run-time states it can be set to
	// Events lists, per event, the default states software can choose;
	// an event that is absent has a default that cannot be changed.
	Events map[RelayEvent][]RelayState `json:"events,omitempty"`
	// Fixed is, per event, what the hardware does that software cannot
	// change, where known.
	Fixed map[RelayEvent]RelayState `json:"fixed,omitempty"`
	Timer *RelayTimerCaps           `json:"timer,omitempty"` // nil: no controller timer
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
func (c RelayCaps) Can(s RelayState) bool { return slices.Contains(c.States, s) }

// CanDefault reports whether the default for e can be set to s.
func (c RelayCaps) CanDefault(e RelayEvent, s RelayState) bool {
	return slices.Contains(c.Events[e], s)
}

// String summarises the capabilities for logs.
func (c RelayCaps) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "states %v", c.States)
	for _, e := range RelayEvents {
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

// BypassStatus is bypassd's /status.
type BypassStatus struct {
	Failsafe  string          `json:"failsafe,omitempty"`
	Planned   *Planned        `json:"planned,omitempty"`
	Forwarder BypassForwarder `json:"forwarder"`
	Budget    Duration        `json:"budget"`
	HoldDown  Duration        `json:"hold_down"`
	Pairs     []PairStatus    `json:"pairs"`
	Log       []BypassEntry   `json:"log"`
}

// BypassForwarder is the last look at the forwarder.
type BypassForwarder struct {
	Healthy bool      `json:"healthy"`
	Reason  string    `json:"reason,omitempty"`
	Checked time.Time `json:"checked"`
}

// PairStatus is one pair.
type PairStatus struct {
	Name       string                `json:"name"`
	Segment    string                `json:"segment,omitempty"`
	Ports      [2]string             `json:"ports"`
	Interfaces [2]string             `json:"interfaces"`
	Backend    string                `json:"backend"`
	Problem    string                `json:"problem,omitempty"` // why it cannot be driven
	State      RelayState            `json:"state"`             // as read back
	Desired    RelayState            `json:"desired"`
	Cause      string                `json:"cause"`
	Since      time.Time             `json:"since"`
	Healthy    bool                  `json:"forwarder_healthy"`
	Health     string                `json:"health,omitempty"`
	HoldDown   Duration              `json:"hold_down"`
	HealthyFor Duration              `json:"healthy_for"`
	Override   *Override             `json:"override,omitempty"`
	Timer      *TimerStatus          `json:"timer,omitempty"`
	Defaults   map[RelayEvent]string `json:"defaults,omitempty"`
	Caps       *RelayCaps            `json:"caps,omitempty"`
	Errors     uint64                `json:"errors"`
	LastError  string                `json:"last_error,omitempty"`
	Counts     map[RelayState]uint64 `json:"transitions"`
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

// BypassEntry is one line of the transition log.
type BypassEntry struct {
	Time  time.Time  `json:"time"`
	Pair  string     `json:"pair,omitempty"`
	Kind  string     `json:"kind"` // transition, override, planned, timer, error, start, failsafe
	From  RelayState `json:"from,omitempty"`
	To    RelayState `json:"to,omitempty"`
	Cause string     `json:"cause"`
}

func (e BypassEntry) String() string {
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
	State   RelayState `json:"state"`
	Reason  string     `json:"reason"`
	By      string     `json:"by,omitempty"`
	Set     time.Time  `json:"set,omitzero"`
	Expires time.Time  `json:"expires,omitzero"` // zero: until cleared
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
	Pair   string     `json:"pair"`  // "" for every pair
	State  RelayState `json:"state"` // normal, bypass or disconnect
	Reason string     `json:"reason"`
	For    string     `json:"for,omitempty"`    // Go duration; "" until cleared
	By     string     `json:"by,omitempty"`     // who asked (statusd passes the user)
	Update bool       `json:"update,omitempty"` // set by ncpos update (Override.Update)
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
