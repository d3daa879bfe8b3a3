package update

import "time"

// clock is the time as the update's waits read it: the real one, or a
// test's that moves only when waited on.
type clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// clock is c's clock, the real one unless a test set another.
func (c *Client) clock() clock {
	if c.clk != nil {
		return c.clk
	}
	return realClock{}
}
