package bypass

import (
	"errors"
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"time"
)

// errUnsupported is returned for an operation the hardware (or its map)
// does not offer; Caps says so up front.
var errUnsupported = errors.New("not supported by this relay")

// errTimerExpired is returned by Kick when the controller's timer had
// already run out: the relay has fallen to its timer_expiry state and must
// be set again.
var errTimerExpired = errors.New("controller timer had expired")

// Backend drives one bypass pair's relay. Implementations do exactly the
// hardware access they are asked for; reading back after a set, retrying
// and logging are the Supervisor's.
type Backend interface {
	// Caps reports what the relay can do.
	Caps() bypassapi.Caps
	// Set puts the relay into s.
	Set(s bypassapi.State) error
	// Get reads the relay's state from the hardware.
	Get() (bypassapi.State, error)
	// SetDefault chooses the state the hardware takes on event e.
	SetDefault(e bypassapi.Event, s bypassapi.State) error
	// Default reads the default for e.
	Default(e bypassapi.Event) (bypassapi.State, error)
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
