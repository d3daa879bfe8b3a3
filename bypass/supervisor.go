package bypass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/ipc/health"
)

// Pair is one bypass pair as bypassd drives it.
type Pair struct {
	Name    string
	Segment string // the segment it belongs to; "" if none (kept in bypass)
	// TestPorts: both ports are the self-test's test ports ([selftest]),
	// and no segment's. The relay keeps them on their cables (normal),
	// since in bypass it would join the two test cables to each other and
	// cut the ports off, and the self-test could not send or receive.
	TestPorts bool
	Ports     [2]string // front-panel names
	Ifnames   [2]string // kernel names, where known
	Kind      string    // backend name from the profile
	Backend   Backend   // nil: cannot be driven, Problem says why
	Problem   string
	// Timer is the controller watchdog timeout to arm (0: leave it off).
	Timer time.Duration
	// Defaults are the event defaults the profile wants.
	Defaults map[bypassapi.Event]bypassapi.State
}

// Options configure a Supervisor.
type Options struct {
	Policy Policy
	// Budget bounds the time from the forwarder becoming unhealthy to the
	// relays being in bypass (default 300ms). The probe interval is a
	// sixth of it and the probe timeout a third, leaving half for setting
	// the relays.
	Budget time.Duration
	Prober Prober
	Log    *Journal
	// ReadBack is how often a settled relay is read back, to notice a
	// controller timer expiry or a change by another program (default 1s).
	ReadBack time.Duration
	// Failsafe, when set, pins every pair in bypass: the profile was
	// refused and nothing else is trusted.
	Failsafe string
	// LinkSettle is how long, after a relay that cuts the NIC off returns
	// to normal, links down are still put down to the relay: a NIC takes
	// a moment (autonegotiation, the forwarder's next sample) to see its
	// cables again (default 3s).
	LinkSettle time.Duration
	// Overrides is the file manual overrides are kept in, with their
	// expiry, so that they survive a bypassd restart and a reboot ("":
	// memory only).
	Overrides string
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// Reload reads the settings again for POST /reconfigure; nil: the
	// supervisor takes no new configuration (sim pairs).
	Reload func() (Settings, error)
}

func (o Options) withDefaults() Options {
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.ReadBack <= 0 {
		o.ReadBack = time.Second
	}
	if o.LinkSettle <= 0 {
		o.LinkSettle = DefaultLinkSettle
	}
	if o.Log == nil {
		o.Log = newJournal("", 0)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Policy = o.Policy.withDefaults()
	return o
}

// ProbeInterval and ProbeTimeout follow from the budget.
func (o Options) ProbeInterval() time.Duration { return max(o.Budget/6, time.Millisecond) }
func (o Options) ProbeTimeout() time.Duration  { return max(o.Budget/3, time.Millisecond) }

// pairState is the supervisor's view of one pair.
type pairState struct {
	*Pair
	caps    bypassapi.Caps
	dec     *Decider
	desired bypassapi.State
	cause   string
	applied bypassapi.State // as last read back (or set and read back)
	since   time.Time
	// reconnected is when the relay last went from bypass or disconnect
	// to normal (zero if it has not since bypassd started).
	reconnected time.Time
	retry       bool
	health      Health

	lastRead    time.Time
	armed       time.Duration // controller timeout in effect, 0 if not armed
	nextKick    time.Time
	timeLeft    time.Duration
	defaults    map[bypassapi.Event]string // what became of each wanted default
	transitions map[bypassapi.State]uint64
	errors      uint64
	lastErr     string
	lastErrAt   time.Time
}

// Supervisor keeps each pair's relay where the policy wants it.
type Supervisor struct {
	opts  Options
	mu    sync.Mutex
	pairs []*pairState

	started   bool
	verdict   Verdict
	checkedAt time.Time
	planned   *bypassapi.Planned
	conds     health.Tracker
}

// newSupervisor supervises pairs.
func newSupervisor(pairs []*Pair, opts Options) *Supervisor {
	s := &Supervisor{opts: opts.withDefaults(), conds: health.Tracker{Source: "bypassd"}}
	for _, p := range pairs {
		ps := &pairState{Pair: p, applied: bypassapi.Unknown, desired: bypassapi.Bypass, transitions: map[bypassapi.State]uint64{}, defaults: map[bypassapi.Event]string{}}
		if p.Backend != nil {
			ps.caps = p.Backend.Caps()
		}
		s.pairs = append(s.pairs, ps)
	}
	return s
}

func (s *Supervisor) logf(e bypassapi.Entry) {
	if e.Time.IsZero() {
		e.Time = s.opts.Now()
	}
	s.opts.Log.Add(e)
}

// Start reads every relay back, sets the event defaults, takes a first
// look at the forwarder, decides (adopting relays already in normal under
// a healthy forwarder, bypass otherwise), arms the controller timers and
// applies the decisions.
func (s *Supervisor) Start(ctx context.Context) {
	v := s.probe(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	s.verdict, s.checkedAt = v, now
	// The kept overrides, read once: they decide adoption and are put back.
	var saved map[string]bypassapi.Override
	var savedErr error
	if s.opts.Overrides != "" {
		saved, savedErr = readOverrides(s.opts.Overrides)
	}
	if s.opts.Failsafe != "" {
		s.logf(bypassapi.Entry{Kind: "failsafe", Cause: "profile refused, every pair stays in bypass: " + s.opts.Failsafe})
	}
	for _, p := range s.pairs {
		if p.Backend == nil {
			s.logf(bypassapi.Entry{Pair: p.Name, Kind: "start", Cause: "not driven: " + p.Problem})
			p.dec = newDecider(s.opts.Policy, now, false)
			continue
		}
		s.logf(bypassapi.Entry{Pair: p.Name, Kind: "start", Cause: fmt.Sprintf("%s backend on %s/%s: %s", p.Kind, p.Ports[0], p.Ports[1], p.caps)})
		st, err := p.Backend.Get()
		if err != nil {
			s.fail(p, now, "reading the relay at start", err)
		}
		p.applied, p.lastRead, p.since = st, now, now
		if s.opts.Failsafe == "" {
			s.setDefaults(p)
		}
		h := s.healthOf(p, v, now)
		p.health = h
		p.dec = newDecider(s.opts.Policy, now, st == bypassapi.Normal && h.OK && s.opts.Failsafe == "" && !inForce(saved, p.Name, now))
	}
	for _, p := range s.pairs {
		if s.opts.Failsafe != "" {
			p.dec.Failsafe(s.opts.Failsafe)
		}
	}
	s.restoreOverrides(now, saved, savedErr)
	s.started = true
	s.reconcile(now)
}

// setDefaults applies the profile's event defaults where the hardware lets
// software choose them, reads each back, and records what could not be
// done.
func (s *Supervisor) setDefaults(p *pairState) {
	for _, e := range bypassapi.Events {
		want, ok := p.Defaults[e]
		if !ok || want == "" {
			if f, fixed := p.caps.Fixed[e]; fixed {
				p.defaults[e] = fmt.Sprintf("%s (fixed by the hardware)", f)
			}
			continue
		}
		if !p.caps.CanDefault(e, want) {
			msg := fmt.Sprintf("wanted %s, but the hardware cannot be set to it", want)
			if f, fixed := p.caps.Fixed[e]; fixed {
				msg = fmt.Sprintf("wanted %s, hardware fixed at %s", want, f)
			}
			p.defaults[e] = msg
			if f := p.caps.Fixed[e]; f != want {
				s.logf(bypassapi.Entry{Pair: p.Name, Kind: "start", Cause: fmt.Sprintf("%s default: %s", e, msg)})
			}
			continue
		}
		err := p.Backend.SetDefault(e, want)
		if err == nil {
			var got bypassapi.State
			if got, err = p.Backend.Default(e); err == nil && got != want {
				err = fmt.Errorf("reads back %s", got)
			} else if errors.Is(err, errUnsupported) {
				err = nil // write-only (exec): nothing to read back
			}
		}
		if err != nil {
			p.defaults[e] = fmt.Sprintf("wanted %s: %v", want, err)
			s.fail(p, s.opts.Now(), fmt.Sprintf("setting the %s default to %s", e, want), err)
			continue
		}
		p.defaults[e] = string(want)
	}
}

func (s *Supervisor) probe(ctx context.Context) Verdict {
	if s.opts.Prober == nil {
		return Verdict{Err: "no forwarder to ask"}
	}
	return s.opts.Prober.Probe(ctx)
}

// Step takes one look at the forwarder and brings every relay where the
// policy wants it: the main loop calls it every ProbeInterval.
func (s *Supervisor) Step(ctx context.Context) {
	if !s.started {
		s.Start(ctx)
		return
	}
	v := s.probe(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	s.verdict, s.checkedAt = v, now
	for _, p := range s.pairs {
		p.health = s.healthOf(p, v, now)
		p.dec.Observe(now, p.health)
	}
	s.reconcile(now)
}

// healthOf is the forwarder's verdict on p's segment; a pair of test
// ports has no segment and is always fit for normal.
func (s *Supervisor) healthOf(p *pairState, v Verdict, now time.Time) Health {
	if p.Segment == "" && p.TestPorts {
		return Health{OK: true, Reason: "self-test ports: kept on their cables"}
	}
	return v.For(p.Segment, s.cutOff(p, now))
}

// cutOff says whether links down on the pair's ports are the relay's own
// doing: it cuts the NIC off in bypass and is there, or it came back to
// normal less than LinkSettle ago and the ports are still finding their
// cables.
func (s *Supervisor) cutOff(p *pairState, now time.Time) bool {
	if !p.caps.LinkDownInBypass {
		return false
	}
	switch p.applied {
	case bypassapi.Bypass, bypassapi.Disconnect:
		return true
	case bypassapi.Normal:
		return !p.reconnected.IsZero() && now.Sub(p.reconnected) < s.opts.LinkSettle
	}
	return false
}

// Apply brings the relays where the policy wants them without a new look
// at the forwarder (after an API call).
func (s *Supervisor) Apply() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reconcile(s.opts.Now())
}

// Run calls Step every ProbeInterval until ctx is done.
func (s *Supervisor) Run(ctx context.Context) {
	if !s.started {
		s.Start(ctx)
	}
	every := s.probeInterval()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Step(ctx)
			if d := s.probeInterval(); d != every {
				every = d // a new budget (Reconfigure)
				t.Reset(every)
			}
		}
	}
}

// probeInterval is the budget's probe interval.
func (s *Supervisor) probeInterval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.ProbeInterval()
}

// reconcile runs with mu held.
func (s *Supervisor) reconcile(now time.Time) {
	for _, p := range s.pairs {
		want, cause, expired := p.dec.Decide(now)
		if expired != nil {
			s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "override", Cause: fmt.Sprintf("override to %s (%s) expired", expired.State, expired.Reason)})
			s.saveOverrides(now)
		}
		p.desired, p.cause = want, cause
		if p.Backend == nil {
			continue
		}
		switch {
		case p.applied != want || p.retry:
			s.set(p, now, want, cause)
		case now.Sub(p.lastRead) >= s.opts.ReadBack:
			s.readBack(p, now)
		}
		s.timer(p, now)
	}
}

// set puts the relay into want and reads it back.
func (s *Supervisor) set(p *pairState, now time.Time, want bypassapi.State, cause string) {
	if !p.caps.Can(want) {
		if !p.retry || p.lastErr == "" {
			s.fail(p, now, "setting "+string(want), fmt.Errorf("%w (can: %v)", errUnsupported, p.caps.States))
		}
		p.retry = false
		return
	}
	from := p.applied
	err := p.Backend.Set(want)
	got := want
	if err == nil && p.caps.ReadBack {
		got, err = p.Backend.Get()
		if err == nil && got != want {
			err = fmt.Errorf("set %s but the relay reads back %s", want, got)
		}
	}
	p.lastRead = now
	if err != nil {
		if got != bypassapi.Unknown && got != want {
			p.applied = got
		}
		p.retry = true
		s.fail(p, now, "setting "+string(want), err)
		return
	}
	if want == bypassapi.Normal && from != bypassapi.Normal {
		p.reconnected = now
	}
	p.applied, p.retry, p.since = want, false, now
	p.transitions[want]++
	s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "transition", From: from, To: want, Cause: cause})
}

// readBack notices a relay that changed by itself.
func (s *Supervisor) readBack(p *pairState, now time.Time) {
	p.lastRead = now
	if p.armed > 0 && p.caps.Timer != nil && p.caps.Timer.TimeLeft {
		if left, err := p.Backend.TimeLeft(); err == nil {
			p.timeLeft = left
		}
	}
	if !p.caps.ReadBack {
		return
	}
	got, err := p.Backend.Get()
	if err != nil {
		s.fail(p, now, "reading the relay back", err)
		return
	}
	if got == p.applied {
		return
	}
	why := "changed outside bypassd"
	if te, ok := p.Backend.(interface{ TimerExpired() (bool, error) }); ok {
		if exp, _ := te.TimerExpired(); exp {
			why = "the controller timer expired"
			p.armed = 0 // re-armed below
		}
	}
	s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "transition", From: p.applied, To: got, Cause: "relay reads back " + string(got) + ": " + why})
	p.transitions[got]++
	if got == bypassapi.Normal {
		p.reconnected = now
	}
	p.applied, p.since = got, now
}

// timer arms the controller watchdog and kicks it at a third of its
// timeout.
func (s *Supervisor) timer(p *pairState, now time.Time) {
	if p.Timer <= 0 || p.caps.Timer == nil {
		return
	}
	if p.armed == 0 {
		d, err := p.Backend.Arm(p.Timer)
		if err != nil {
			s.fail(p, now, "arming the controller timer", err)
			return
		}
		p.armed, p.nextKick = d, now.Add(d/3)
		s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "timer", Cause: fmt.Sprintf("controller timer armed: %v (asked %v)", d, p.Timer)})
		return
	}
	if now.Before(p.nextKick) {
		return
	}
	if err := p.Backend.Kick(); err != nil {
		if errors.Is(err, errTimerExpired) {
			s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "timer", Cause: "controller timer had expired; re-arming and setting the relay again"})
			p.armed, p.retry = 0, true
			return
		}
		s.fail(p, now, "kicking the controller timer", err)
		return
	}
	p.nextKick = now.Add(p.armed / 3)
}

// fail records a backend error, logging it when it is new or a minute
// has passed, so a relay that keeps failing does not flood the log.
func (s *Supervisor) fail(p *pairState, now time.Time, what string, err error) {
	p.errors++
	msg := what + ": " + err.Error()
	if msg != p.lastErr || now.Sub(p.lastErrAt) >= time.Minute {
		s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "error", Cause: msg})
		p.lastErrAt = now
	}
	p.lastErr = msg
}

func (s *Supervisor) find(pair string) ([]*pairState, error) {
	if pair == "" {
		return s.pairs, nil
	}
	for _, p := range s.pairs {
		if p.Name == pair {
			return []*pairState{p}, nil
		}
	}
	var names []string
	for _, p := range s.pairs {
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("unknown pair %q, want one of %s", pair, strings.Join(names, ", "))
}

// SetOverride forces pair ("" for every pair) into o.State and applies it.
func (s *Supervisor) SetOverride(pair string, o bypassapi.Override) error {
	if strings.TrimSpace(o.Reason) == "" {
		return errors.New("an override needs a reason")
	}
	if !slices.Contains(bypassapi.States, o.State) {
		return fmt.Errorf("unknown state %q", o.State)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, err := s.find(pair)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	if o.Set.IsZero() {
		o.Set = now
	}
	for _, p := range ps {
		if p.Backend != nil && !p.caps.Can(o.State) {
			return fmt.Errorf("pair %s cannot be set to %s (can: %v)", p.Name, o.State, p.caps.States)
		}
	}
	for _, p := range ps {
		p.dec.SetOverride(o)
		until := "until cleared"
		if !o.Expires.IsZero() {
			until = "until " + o.Expires.UTC().Format(time.RFC3339)
		}
		by := ""
		if o.By != "" {
			by = " by " + o.By
		}
		s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "override", Cause: fmt.Sprintf("override to %s%s, %s: %s", o.State, by, until, o.Reason)})
	}
	s.saveOverrides(now)
	s.reconcile(now)
	return nil
}

// ClearOverride returns pair ("" for every pair) to automatic control.
func (s *Supervisor) ClearOverride(pair, by string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, err := s.find(pair)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	for _, p := range ps {
		if p.dec.Override() == nil {
			continue
		}
		p.dec.ClearOverride()
		cause := "override cleared"
		if by != "" {
			cause += " by " + by
		}
		s.logf(bypassapi.Entry{Time: now, Pair: p.Name, Kind: "override", Cause: cause})
	}
	s.saveOverrides(now)
	s.reconcile(now)
	return nil
}

// Plan puts every pair into bypass for a planned shutdown, reboot or
// update and returns once the relays have been set and read back; the
// error lists pairs that are not in bypass.
func (s *Supervisor) Plan(kind, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	s.planned = &bypassapi.Planned{Kind: kind, Reason: reason, Since: now}
	s.logf(bypassapi.Entry{Time: now, Kind: "planned", Cause: fmt.Sprintf("planned %s: %s", kind, reason)})
	for _, p := range s.pairs {
		if p.dec != nil {
			p.dec.Plan(*s.planned)
		}
	}
	s.reconcile(now)
	var bad []string
	for _, p := range s.pairs {
		if p.Backend != nil && p.applied != bypassapi.Bypass {
			bad = append(bad, fmt.Sprintf("%s reads %s (%s)", p.Name, p.applied, p.lastErr))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("not in bypass: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Unplan cancels a planned shutdown (an update that was called off).
func (s *Supervisor) Unplan(by string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.planned == nil {
		return
	}
	now := s.opts.Now()
	s.logf(bypassapi.Entry{Time: now, Kind: "planned", Cause: fmt.Sprintf("planned %s called off %s", s.planned.Kind, by)})
	s.planned = nil
	for _, p := range s.pairs {
		p.dec.Unplan()
	}
	s.reconcile(now)
}

// Report is bypassd's health.Report. bypassd is live while its loop keeps
// looking at the forwarder; everything about the relays (one that cannot
// be driven, one that reads back other than wanted, one in bypass, a
// hold-down running, a refused profile) is a condition: it shows on the
// dashboard, in events and metrics, and never makes the watchdog reset
// the box, which would put every relay in bypass and mend nothing.
func (s *Supervisor) Report() health.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	var problems []health.Problem
	if stale := s.staleAfter(); !s.checkedAt.IsZero() && now.Sub(s.checkedAt) > stale {
		problems = append(problems, health.Problem{Kind: health.HeartbeatStale,
			Detail: fmt.Sprintf("last look at the forwarder %v ago, want one every %v", now.Sub(s.checkedAt).Round(time.Millisecond), s.opts.ProbeInterval())})
	}
	var conds []health.Condition
	if s.opts.Failsafe != "" {
		conds = append(conds, health.Condition{Kind: health.ProfileRefused, Detail: "profile refused, every pair kept in bypass: " + s.opts.Failsafe})
	}
	if s.planned != nil {
		conds = append(conds, health.Condition{Kind: health.PlannedStop, Detail: fmt.Sprintf("planned %s: %s", s.planned.Kind, s.planned.Reason)})
	}
	for _, p := range s.pairs {
		c := health.Condition{Segment: p.Segment, Pair: p.Name}
		switch {
		case p.Backend == nil:
			c.Kind, c.Detail = health.RelayNotDrivable, fmt.Sprintf("pair %s not driven: %s", p.Name, p.Problem)
			conds = append(conds, c)
			continue
		case p.applied != p.desired:
			c.Kind, c.Detail = health.RelayMismatch, fmt.Sprintf("pair %s reads %s, wanted %s: %s", p.Name, p.applied, p.desired, p.lastErr)
			conds = append(conds, c)
		}
		if p.applied == bypassapi.Bypass || p.applied == bypassapi.Disconnect {
			c.Kind, c.Detail = health.RelayBypass, fmt.Sprintf("pair %s in %s: %s", p.Name, p.applied, p.cause)
			conds = append(conds, c)
		}
		if p.dec != nil && p.desired == bypassapi.Bypass && p.health.OK && !p.dec.HealthySince().IsZero() && p.dec.Override() == nil && s.planned == nil {
			left := p.dec.HoldDown(now) - now.Sub(p.dec.HealthySince())
			if left > 0 {
				c.Kind, c.Detail = health.HoldDown, fmt.Sprintf("pair %s back to normal in %v (%s %v)", p.Name, left.Round(time.Millisecond), p.dec.holdDownName(), p.dec.HoldDown(now))
				conds = append(conds, c)
			}
		}
	}
	return health.Report{Daemon: "bypassd", Live: health.Live(s.checkedAt, problems...), Conditions: s.conds.Update(now, conds)}
}

// staleAfter is how old the last look at the forwarder may be before
// bypassd's loop counts as stuck: many probe intervals, and never less than
// two seconds, since a slow relay (SMBus, a bit-banged controller) may take
// a while to set and read back.
func (s *Supervisor) staleAfter() time.Duration {
	return max(2*time.Second, 10*s.opts.ProbeInterval()+s.opts.ProbeTimeout())
}
