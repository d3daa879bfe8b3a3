package bypass

import (
	"errors"
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
	PowerOff    Event = "power_off"    // the box loses power (or is switched off)
	PowerUp     Event = "power_up"     // from power-on until software sets a state ("Just-On")
	TimerExpiry Event = "timer_expiry" // the controller's own watchdog timer ran out
)

// Events are all events, in a fixed order.
var Events = []Event{PowerOff, PowerUp, TimerExpiry}

// ErrUnsupported is returned for an operation the hardware (or its map)
// does not offer; Caps says so up front.
var ErrUnsupported = errors.New("not supported by this relay")

// ErrTimerExpired is returned by Kick when the controller's timer had
// already run out: the relay has fallen to its timer_expiry state and must
// be set again.
var ErrTimerExpired = errors.New("controller timer had expired")

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
	// LinkDownInBypass: in bypass the NIC ports are cut off from the
	// cables, so the forwarder sees their links down. True of every
	// hardware relay; false for sim.
	LinkDownInBypass bool     `json:"link_down_in_bypass"`
	Notes            []string `json:"notes,omitempty"`
}

// Can reports whether the relay can be set to s at run time.
func (c Caps) Can(s State) bool { return slices.Contains(c.States, s) }

// CanDefault reports whether the default for e can be set to s.
func (c Caps) CanDefault(e Event, s State) bool { return slices.Contains(c.Events[e], s) }

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
	}
	return b.String()
}

// Backend drives one bypass pair's relay. Implementations do exactly the
// hardware access they are asked for; reading back after a set, retrying
// and logging are the Supervisor's.
type Backend interface {
	// Caps reports what the relay can do.
	Caps() Caps
	// Set puts the relay into s.
	Set(s State) error
	// Get reads the relay's state from the hardware.
	Get() (State, error)
	// SetDefault chooses the state the hardware takes on event e.
	SetDefault(e Event, s State) error
	// Default reads the default for e.
	Default(e Event) (State, error)
	// Arm starts the controller's watchdog timer with timeout d (rounded
	// up to the hardware's granularity) and returns the timeout in effect.
	Arm(d time.Duration) (time.Duration, error)
	// Kick restarts the timer's count.
	Kick() error
	// Disarm stops the timer.
	Disarm() error
	// TimeLeft reads the time until the timer expires.
	TimeLeft() (time.Duration, error)
	// Close releases the device; the relay keeps its state.
	Close() error
}

// roundUp rounds d up to a whole number of units, at least one.
func roundUp(d, unit time.Duration) int64 {
	if unit <= 0 {
		return 0
	}
	n := int64((d + unit - 1) / unit)
	return max(n, 1)
}
