package watchdog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

// Times are watchdogd's timings, which it takes in place: the hardware
// timeout, the check-and-pet interval, the grace after boot, and the
// gate's checks made for that interval.
type Times struct {
	Timeout, Interval, Grace time.Duration
	Checks                   []Check // nil: keep the gate's
}

// timeoutSetter is a device whose hardware timeout can be changed.
type timeoutSetter interface {
	SetTimeout(time.Duration) (time.Duration, error)
}

type retime struct {
	t    Times
	done chan retimed
}

type retimed struct {
	r   watchdogapi.Retimed
	err error
}

// Retime has the running supervisor take new timings between two of its
// steps, so that no check is running meanwhile.
func (s *Supervisor) Retime(ctx context.Context, t Times) (watchdogapi.Retimed, error) {
	if t.Interval <= 0 || 2*t.Interval >= t.Timeout {
		return watchdogapi.Retimed{}, fmt.Errorf("interval %v must be positive and below half of the timeout %v", t.Interval, t.Timeout)
	}
	if s.retimes == nil {
		return watchdogapi.Retimed{}, errors.New("this supervisor takes no new timings")
	}
	req := retime{t: t, done: make(chan retimed, 1)}
	select {
	case s.retimes <- req:
	case <-ctx.Done():
		return watchdogapi.Retimed{}, ctx.Err()
	}
	select {
	case r := <-req.done:
		return r.r, r.err
	case <-ctx.Done():
		return watchdogapi.Retimed{}, ctx.Err()
	}
}

// take applies new timings; Run calls it between steps.
func (s *Supervisor) take(t Times) (watchdogapi.Retimed, error) {
	timeout := t.Timeout
	if d, ok := s.Dev.(timeoutSetter); ok {
		got, err := d.SetTimeout(t.Timeout)
		if err != nil {
			return watchdogapi.Retimed{}, fmt.Errorf("setting the hardware timeout to %v: %w", t.Timeout, err)
		}
		if 2*t.Interval >= got {
			// The driver rounded it down: keep the pets well inside it.
			d.SetTimeout(time.Duration(s.status.TimeoutSec) * time.Second)
			return watchdogapi.Retimed{}, fmt.Errorf("the hardware took a timeout of %v, not above twice the interval %v", got, t.Interval)
		}
		timeout = got
	}
	s.Gate.setTimes(t.Interval, t.Grace, t.Checks)
	s.mu.Lock()
	defer s.mu.Unlock()
	// The interval starts now: the last step is no older than it.
	s.lastStep = s.Now()
	s.Interval = t.Interval
	s.status.TimeoutSec, s.status.IntervalSec = int(timeout/time.Second), t.Interval.Seconds()
	return watchdogapi.Retimed{TimeoutSec: s.status.TimeoutSec, IntervalSec: s.status.IntervalSec, GraceSec: t.Grace.Seconds()}, nil
}

// interval is the check-and-pet interval in force.
func (s *Supervisor) interval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Interval
}

// setTimes changes the checks' timeout, the grace and the checks.
func (g *Gate) setTimes(timeout, grace time.Duration, checks []Check) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Timeout, g.Grace = timeout, grace
	if checks != nil {
		g.Checks = checks
	}
}
