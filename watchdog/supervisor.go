package watchdog

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

// Pinger is the part of a watchdog device the supervisor needs; tests use
// a fake one.
type Pinger interface {
	Ping() error
	TimeLeft() (time.Duration, error)
}

// Supervisor pets the watchdog only while the gate says the appliance is
// healthy. When it stops, it first records why in /perm, so the next boot
// can name the failing check; if health returns before the hardware fires,
// it pets again and forgets the record.
type Supervisor struct {
	Dev      Pinger
	Gate     *Gate
	Records  Records
	Interval time.Duration
	Now      func() time.Time

	mu       sync.Mutex // guards Interval after Run starts, and what follows
	status   watchdogapi.Status
	lastStep time.Time
	retimes  chan retime // Retime's requests, taken by Run between steps
}

// NewSupervisor prepares a supervisor; base carries the device facts
// (identity, timeout, source, last reset) for Status.
func NewSupervisor(dev Pinger, gate *Gate, rec Records, interval time.Duration, base watchdogapi.Status) *Supervisor {
	base.IntervalSec = interval.Seconds()
	base.Petting = true
	return &Supervisor{Dev: dev, Gate: gate, Records: rec, Interval: interval, Now: time.Now, status: base, retimes: make(chan retime)}
}

// Step evaluates the checks once and pets or not.
func (s *Supervisor) Step(ctx context.Context) Decision {
	now := s.Now()
	d := s.Gate.Evaluate(ctx, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastStep = now
	s.status.InGrace = d.InGrace
	if !d.Pet {
		if s.status.Petting {
			reason := d.Reason()
			log.Printf("watchdog: not petting any more, the hardware resets the box in about %d s unless health returns: %s", s.status.TimeoutSec, reason)
			if err := s.Records.WriteFailure(d, now); err != nil {
				log.Printf("watchdog: %v", err)
			}
			s.status.Petting, s.status.StoppedReason = false, reason
		}
		return d
	}
	if !s.status.Petting {
		log.Printf("watchdog: health is back, petting again")
		if err := s.Records.ClearFailure(); err != nil {
			log.Printf("watchdog: %v", err)
		}
		s.status.Petting, s.status.StoppedReason = true, ""
	}
	if err := s.Dev.Ping(); err != nil {
		s.status.LastPingError = err.Error()
		return d
	}
	s.status.LastPingError = ""
	s.status.Pings++
	s.status.LastPing = now
	return d
}

// Run steps every Interval until ctx is done. It never disarms: stopping
// must lead to a reset unless a planned stop is recorded and the kernel
// stops the watchdog on reboot.
func (s *Supervisor) Run(ctx context.Context) {
	t := time.NewTicker(s.interval())
	defer t.Stop()
	for {
		s.Step(ctx)
		if !s.wait(ctx, t) {
			return
		}
	}
}

// wait waits for the next tick, taking new timings meanwhile; false when
// ctx is done.
func (s *Supervisor) wait(ctx context.Context, t *time.Ticker) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case r := <-s.retimes:
			res, err := s.take(r.t)
			t.Reset(s.interval())
			r.done <- retimed{res, err}
		}
	}
}

// Status returns a snapshot with the time left read now.
func (s *Supervisor) Status() watchdogapi.Status {
	left := -1
	if d, err := s.Dev.TimeLeft(); err == nil {
		left = int(d / time.Second)
	}
	checks := s.Gate.States()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.TimeLeftSec = left
	st.Checks = checks
	return st
}

// Reporter is watchdogd's health.Report: live while its loop steps, with
// the box conditions it watches: /perm (under root, with at least minFree
// bytes free) and the pets themselves.
func Reporter(s *Supervisor, root string, minFree uint64) func() health.Report {
	tr := &health.Tracker{Source: "watchdogd"}
	return func() health.Report {
		now := s.Now()
		st := s.Status()
		var problems []health.Problem
		last := s.LastStep()
		if age := now.Sub(last); age > 4*s.interval() {
			problems = append(problems, health.Problem{Kind: health.HeartbeatStale,
				Detail: fmt.Sprintf("last check %v ago", age.Round(time.Millisecond))})
		}
		var conds []health.Condition
		if err := checkPerm(root, minFree); err != nil {
			conds = append(conds, health.Condition{Kind: health.PermDegraded, Detail: err.Error()})
		}
		switch {
		case !st.Petting:
			conds = append(conds, health.Condition{Kind: health.WatchdogUnpetted, Detail: "not petting: " + st.StoppedReason})
		case st.LastPingError != "":
			conds = append(conds, health.Condition{Kind: health.WatchdogUnpetted, Detail: "last ping failed: " + st.LastPingError})
		}
		return health.Report{Daemon: "watchdogd", Live: health.Live(last, problems...), Conditions: tr.Update(now, conds)}
	}
}

// LastStep is when the checks last ran (zero before the first).
func (s *Supervisor) LastStep() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastStep
}
