package config

import (
	"fmt"
	"strconv"
	"time"
)

// Duration is a time.Duration written in TOML as a Go duration string
// ("30s", "1m30s"). TOML has no duration type, and a bare integer would leave
// the reader guessing the unit.
type Duration struct {
	time.Duration
}

// Seconds is a convenience constructor for whole-second durations.
func Seconds(n int) Duration {
	return Duration{time.Duration(n) * time.Second}
}

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("invalid duration %q, want a Go duration such as \"30s\" or \"1m30s\"", text)
	}
	d.Duration = v
	return nil
}

// MarshalText writes whole seconds as "120s" rather than time.Duration's
// "2m0s", so a written-back file reads like the hand-written default.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(d.String()), nil
}

// MarshalTOML writes the duration as a basic string ("120s"), as
// default.toml spells durations, where go-toml would write the text of
// MarshalText as a literal one ('120s'). Config.TOML enables it.
func (d Duration) MarshalTOML() ([]byte, error) {
	return []byte(strconv.Quote(d.String())), nil
}

// String is the form MarshalText writes.
func (d Duration) String() string {
	if d.Duration%time.Second == 0 {
		return strconv.FormatInt(int64(d.Duration/time.Second), 10) + "s"
	}
	return d.Duration.String()
}
