package bypass

import (
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/prometheus/client_golang/prometheus"
)

// Status reports every pair and the last log entries.
func (s *Supervisor) Status() bypassapi.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	st := bypassapi.Status{Failsafe: s.opts.Failsafe, Planned: s.planned, Budget: bypassapi.Duration(s.opts.Budget), HoldDown: bypassapi.Duration(s.opts.Policy.HoldDown),
		StartHoldDown: bypassapi.Duration(s.opts.Policy.StartHoldDown),
		Forwarder:     bypassapi.HealthStatus{Healthy: s.verdict.OK(), Reason: s.verdict.Summary(), Checked: s.checkedAt}}
	for _, p := range s.pairs {
		ps := bypassapi.PairStatus{Name: p.Name, Segment: p.Segment, Ports: p.Ports, Interfaces: p.Ifnames, Backend: p.Kind, Problem: p.Problem,
			State: p.applied, Desired: p.desired, Cause: p.cause, Since: p.since, Healthy: p.health.OK, Health: p.health.Reason,
			Errors: p.errors, LastError: p.lastErr, Counts: p.transitions}
		if p.dec != nil {
			ps.HoldDown = bypassapi.Duration(p.dec.HoldDown(now))
			if hs := p.dec.HealthySince(); !hs.IsZero() {
				ps.HealthyFor = bypassapi.Duration(now.Sub(hs).Round(time.Millisecond))
			}
			ps.Override = p.dec.Override()
		}
		if p.Backend != nil {
			c := p.caps
			ps.Caps = &c
			ps.Defaults = p.defaults
			if c.Timer != nil {
				ps.Timer = &bypassapi.TimerStatus{Armed: p.armed > 0, Timeout: bypassapi.Duration(p.armed), TimeLeft: bypassapi.Duration(p.timeLeft), Unit: bypassapi.Duration(c.Timer.Unit)}
			}
		}
		st.Pairs = append(st.Pairs, ps)
	}
	st.Log = s.opts.Log.Entries(100)
	return st
}

var (
	stateDesc     = prometheus.NewDesc("ncpos_bypass_state", "Relay state of a bypass pair as read back (1 for the current state).", []string{"pair", "state"}, nil)
	desiredDesc   = prometheus.NewDesc("ncpos_bypass_desired_state", "State the policy wants for a bypass pair (1 for the wanted state).", []string{"pair", "state"}, nil)
	transDesc     = prometheus.NewDesc("ncpos_bypass_transitions_total", "Relay transitions of a bypass pair, by the state entered.", []string{"pair", "state"}, nil)
	errorsDesc    = prometheus.NewDesc("ncpos_bypass_errors_total", "Failed relay operations of a bypass pair.", []string{"pair"}, nil)
	healthyDesc   = prometheus.NewDesc("ncpos_bypass_forwarder_healthy", "Whether the forwarder serves the pair's segment (1) or not (0).", []string{"pair"}, nil)
	overrideDesc  = prometheus.NewDesc("ncpos_bypass_override", "Whether a manual override is active on the pair.", []string{"pair"}, nil)
	holdDownDesc  = prometheus.NewDesc("ncpos_bypass_hold_down_seconds", "Hold-down in force for the pair (with flap damping).", []string{"pair"}, nil)
	timerLeftDesc = prometheus.NewDesc("ncpos_bypass_timer_seconds_left", "Time left on the pair's controller watchdog timer.", []string{"pair"}, nil)
	drivableDesc  = prometheus.NewDesc("ncpos_bypass_drivable", "Whether bypassd can drive the pair's relay (0: register map missing, no backend, open failed).", []string{"pair"}, nil)
	failsafeDesc  = prometheus.NewDesc("ncpos_bypass_failsafe", "1 when the profile was refused and every pair is held in bypass.", nil, nil)
	plannedDesc   = prometheus.NewDesc("ncpos_bypass_planned", "1 while a planned shutdown, reboot or update holds every pair in bypass.", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *Supervisor) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(s, ch) }

// Collect implements prometheus.Collector.
func (s *Supervisor) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for _, p := range s.pairs {
		for _, st := range append(bypassapi.States, bypassapi.Unknown) {
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, b(p.applied == st), p.Name, string(st))
			ch <- prometheus.MustNewConstMetric(desiredDesc, prometheus.GaugeValue, b(p.desired == st), p.Name, string(st))
		}
		for _, st := range bypassapi.States {
			ch <- prometheus.MustNewConstMetric(transDesc, prometheus.CounterValue, float64(p.transitions[st]), p.Name, string(st))
		}
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(p.errors), p.Name)
		ch <- prometheus.MustNewConstMetric(healthyDesc, prometheus.GaugeValue, b(p.health.OK), p.Name)
		ch <- prometheus.MustNewConstMetric(drivableDesc, prometheus.GaugeValue, b(p.Backend != nil), p.Name)
		if p.dec != nil {
			ch <- prometheus.MustNewConstMetric(overrideDesc, prometheus.GaugeValue, b(p.dec.Override() != nil), p.Name)
			ch <- prometheus.MustNewConstMetric(holdDownDesc, prometheus.GaugeValue, p.dec.HoldDown(now).Seconds(), p.Name)
		}
		if p.armed > 0 && p.caps.Timer != nil && p.caps.Timer.TimeLeft {
			ch <- prometheus.MustNewConstMetric(timerLeftDesc, prometheus.GaugeValue, p.timeLeft.Seconds(), p.Name)
		}
	}
	ch <- prometheus.MustNewConstMetric(failsafeDesc, prometheus.GaugeValue, b(s.opts.Failsafe != ""))
	ch <- prometheus.MustNewConstMetric(plannedDesc, prometheus.GaugeValue, b(s.planned != nil))
}
