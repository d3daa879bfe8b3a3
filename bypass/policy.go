package bypass

import (
	"fmt"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/ipc/health"
)

// Policy is when a pair should be in bypass. It is pure: every method takes
// the time, so tests drive it with a fake clock.
type Policy struct {
	// HoldDown is how long the forwarder must have been healthy without a
	// break before a pair goes back to normal (default 5s).
	HoldDown time.Duration
	// StartHoldDown is the hold-down of a pair's first return to normal
	// after bypassd starts with its relay in bypass, as after power-on
	// (default 1s, never more than HoldDown when left at zero). The pair
	// has been in bypass since the box went down; no failure of this run
	// came before it, so there is nothing to damp, and each second of it
	// is a second of traffic the box does not inspect. A forwarder that
	// fails after that first return meets the full hold-down.
	StartHoldDown time.Duration
	// FlapWindow and MaxHoldDown damp flapping: each health failure within
	// the last FlapWindow doubles the hold-down, up to MaxHoldDown
	// (defaults 2m and 2m).
	FlapWindow  time.Duration
	MaxHoldDown time.Duration
}

// Policy defaults.
const (
	DefaultHoldDown      = 5 * time.Second
	defaultStartHoldDown = config.DefaultStartHoldDown
	DefaultFlapWindow    = 2 * time.Minute
	DefaultMaxHoldDown   = 2 * time.Minute
	DefaultBudget        = 300 * time.Millisecond
	DefaultLinkSettle    = 3 * time.Second
)

func (p Policy) withDefaults() Policy {
	if p.HoldDown <= 0 {
		p.HoldDown = DefaultHoldDown
	}
	if p.StartHoldDown <= 0 {
		p.StartHoldDown = min(defaultStartHoldDown, p.HoldDown)
	}
	if p.FlapWindow <= 0 {
		p.FlapWindow = DefaultFlapWindow
	}
	if p.MaxHoldDown < p.HoldDown {
		p.MaxHoldDown = max(DefaultMaxHoldDown, p.HoldDown)
	}
	return p
}

// Health is one verdict on whether the forwarder serves a pair's segment.
type Health struct {
	OK     bool
	Reason string // why not (or, when OK, a remark such as "links down while bypassed"); for people only
	// Kinds are the kinds of the conditions or liveness problems behind
	// the verdict.
	Kinds []health.Kind
}

// Decider applies the policy to one pair. Priority, highest first: a
// refused profile (failsafe), a planned shutdown, a manual override, then
// forwarder health with hold-down and flap damping.
type Decider struct {
	p Policy

	auto         bypassapi.State // what health alone says
	autoCause    string
	healthySince time.Time // zero while not healthy
	lastHealth   Health
	failures     []time.Time // health failures that took the pair out of normal
	// starting: the pair has not been normal since bypassd started it
	// in bypass; its hold-down is the start hold-down.
	starting bool

	override *bypassapi.Override
	planned  *bypassapi.Planned
	failsafe string

	state bypassapi.State // last decision
	cause string
}

// newDecider starts a pair at now. adopt: the relay already reads normal
// and the forwarder is healthy right now (bypassd restarted under a working
// appliance), so the pair stays normal instead of bouncing through bypass;
// otherwise the pair is in bypass until the forwarder has been healthy for
// the start hold-down, as after power-on.
func newDecider(p Policy, now time.Time, adopt bool) *Decider {
	d := &Decider{p: p.withDefaults()}
	if adopt {
		d.auto, d.autoCause = bypassapi.Normal, "start: relay already normal and forwarder healthy"
		d.healthySince = now
		d.lastHealth = Health{OK: true}
	} else {
		d.auto, d.autoCause = bypassapi.Bypass, "start: bypass until the forwarder is healthy"
		d.starting = true
	}
	d.state, d.cause = d.auto, d.autoCause
	return d
}

// HoldDown is the hold-down in force at now: the start hold-down until the
// pair's first return to normal, then the hold-down with flap damping.
func (d *Decider) HoldDown(now time.Time) time.Duration {
	if d.starting {
		return d.p.StartHoldDown
	}
	d.prune(now)
	h := d.p.HoldDown
	for i := 1; i < len(d.failures) && h < d.p.MaxHoldDown; i++ {
		h *= 2
	}
	return min(h, d.p.MaxHoldDown)
}

func (d *Decider) prune(now time.Time) {
	i := 0
	for i < len(d.failures) && now.Sub(d.failures[i]) >= d.p.FlapWindow {
		i++
	}
	d.failures = d.failures[i:]
}

// Observe feeds one health verdict taken at now.
func (d *Decider) Observe(now time.Time, h Health) {
	d.lastHealth = h
	if !h.OK {
		d.healthySince = time.Time{}
		if d.auto == bypassapi.Normal {
			d.auto = bypassapi.Bypass
			d.autoCause = "forwarder unhealthy: " + h.Reason
			d.failures = append(d.failures, now)
		}
		return
	}
	if d.healthySince.IsZero() {
		d.healthySince = now
	}
	d.advance(now)
}

// advance returns to normal once the hold-down has passed.
func (d *Decider) advance(now time.Time) {
	if d.auto != bypassapi.Bypass || d.healthySince.IsZero() {
		return
	}
	hd := d.HoldDown(now)
	if up := now.Sub(d.healthySince); up >= hd {
		d.autoCause = fmt.Sprintf("forwarder healthy for %v (%s %v)", up.Round(time.Millisecond), d.holdDownName(), hd)
		d.auto, d.starting = bypassapi.Normal, false
	}
}

// SetOverride forces state o.State until o.Expires (or until cleared).
func (d *Decider) SetOverride(o bypassapi.Override) { d.override = &o }

// ClearOverride returns the pair to automatic control.
func (d *Decider) ClearOverride() { d.override = nil }

// Override returns the active override, if any.
func (d *Decider) Override() *bypassapi.Override { return d.override }

// Plan puts the pair into bypass for a planned shutdown, reboot or update
// until Unplan.
func (d *Decider) Plan(p bypassapi.Planned) { d.planned = &p }

// Unplan cancels a planned shutdown (an update that was called off).
func (d *Decider) Unplan() { d.planned = nil }

// Failsafe pins the pair in bypass for good: the profile was refused.
func (d *Decider) Failsafe(reason string) { d.failsafe = reason }

// holdDownName names the hold-down in force, for causes and conditions.
func (d *Decider) holdDownName() string {
	if d.starting {
		return "start hold-down"
	}
	return "hold-down"
}

// HealthySince is when the current run of health began (zero if not
// healthy).
func (d *Decider) HealthySince() time.Time { return d.healthySince }

// LastHealth is the last verdict observed.
func (d *Decider) LastHealth() Health { return d.lastHealth }

// Decide returns the state the pair should be in at now and why. An
// override that has expired is dropped here; expired reports it, so the
// caller can log it.
func (d *Decider) Decide(now time.Time) (s bypassapi.State, cause string, expired *bypassapi.Override) {
	d.advance(now)
	if o := d.override; o != nil && !o.Expires.IsZero() && !now.Before(o.Expires) {
		expired = o
		d.override = nil
	}
	switch {
	case d.failsafe != "":
		s, cause = bypassapi.Bypass, "failsafe: "+d.failsafe
	case d.planned != nil:
		s, cause = bypassapi.Bypass, fmt.Sprintf("planned %s: %s", d.planned.Kind, d.planned.Reason)
	case d.override != nil:
		s, cause = d.override.State, "manual override: "+d.override.Reason
		if !d.override.Expires.IsZero() {
			cause += fmt.Sprintf(" (until %s)", d.override.Expires.UTC().Format(time.RFC3339))
		}
	default:
		s, cause = d.auto, d.autoCause
		if expired != nil {
			cause = fmt.Sprintf("override %q expired; %s", expired.Reason, cause)
		}
	}
	d.state, d.cause = s, cause
	return s, cause, expired
}
