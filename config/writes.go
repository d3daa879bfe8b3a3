package config

// Writes are what a backend does to select each relay state, of the relay
// itself or of one of its event defaults: register writes, file writes or
// a command line (T). A state without any is one the hardware (or the
// map) does not offer. One table for every backend, so that a backend
// never spells out the states again.
type Writes[T any] struct {
	Normal     T `toml:"normal"`
	Bypass     T `toml:"bypass"`
	Disconnect T `toml:"disconnect"`
}

// Of is the entry of state ("normal", "bypass" or "disconnect"); nil for
// any other name.
func (w *Writes[T]) Of(state string) *T {
	switch state {
	case "normal":
		return &w.Normal
	case "bypass":
		return &w.Bypass
	case "disconnect":
		return &w.Disconnect
	}
	return nil
}

// Each calls fn with each state's name and entry, in the order normal,
// bypass, disconnect.
func (w *Writes[T]) Each(fn func(state string, v *T)) {
	for _, s := range bypassStates {
		fn(s, w.Of(s))
	}
}

// event is the entry of event ("power_off", "power_up" or "timer_expiry")
// among a backend section's three; nil for any other name.
func event[T any](name string, powerOff, powerUp, timerExpiry *T) *T {
	switch name {
	case "power_off":
		return powerOff
	case "power_up":
		return powerUp
	case "timer_expiry":
		return timerExpiry
	}
	return nil
}

// Event is the writes of an event's default states.
func (m *RegisterMap) Event(name string) *RegStates {
	return event(name, &m.PowerOff, &m.PowerUp, &m.TimerExpiry)
}

// Event is the writes of an event's default states.
func (s *Sysfs) Event(name string) *FileStates {
	return event(name, &s.PowerOff, &s.PowerUp, &s.TimerExpiry)
}

// Event is the commands of an event's default states.
func (e *Exec) Event(name string) *ExecStates {
	return event(name, &e.PowerOff, &e.PowerUp, &e.TimerExpiry)
}
