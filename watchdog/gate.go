package watchdog

import (
	"context"
	"fmt"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"sort"
	"strings"
	"sync"
	"time"
)

// Check is one health check that must pass for the watchdog to be petted.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Decision is what the gate concluded at one evaluation.
type Decision struct {
	Pet     bool                     `json:"pet"`
	InGrace bool                     `json:"in_grace"`
	Failing []watchdogapi.CheckState `json:"failing,omitempty"`
}

// Reason describes the failing checks for logs and the reset record, e.g.
// "forwarderd /healthz failing since 12:01:02: datapath stalled".
func (d Decision) Reason() string {
	var parts []string
	for _, f := range d.Failing {
		parts = append(parts, fmt.Sprintf("%s failing since %s: %s", f.Name, f.Since.UTC().Format(time.RFC3339), f.Error))
	}
	return strings.Join(parts, "; ")
}

// Gate decides whether the watchdog may be petted: only while every check
// passes, except during the grace period after boot (the daemons are still
// coming up). Checks run concurrently, each bounded by Timeout, so a check
// that hangs counts as failing instead of stalling the gate — a hung gate
// would stop petting anyway, but without saying why.
type Gate struct {
	Checks  []Check
	Timeout time.Duration
	Boot    time.Time     // when the system booted
	Grace   time.Duration // pet unconditionally until Boot+Grace

	mu       sync.Mutex
	states   map[string]*watchdogapi.CheckState
	inflight map[string]time.Time // checks whose earlier run has not returned
}

// Evaluate runs the checks at now and decides.
func (g *Gate) Evaluate(ctx context.Context, now time.Time) Decision {
	type result struct {
		i   int
		err error
		dur time.Duration
	}
	results := make(chan result, len(g.Checks))
	g.mu.Lock()
	if g.inflight == nil {
		g.inflight = map[string]time.Time{}
	}
	g.mu.Unlock()
	for i, c := range g.Checks {
		g.mu.Lock()
		started, hanging := g.inflight[c.Name]
		if !hanging {
			g.inflight[c.Name] = now
		}
		g.mu.Unlock()
		if hanging {
			// Do not pile up goroutines behind a check that ignores its
			// context; it stays failing until that run returns.
			results <- result{i, fmt.Errorf("still hanging since %s", started.UTC().Format(time.RFC3339)), 0}
			continue
		}
		go func() {
			cctx, cancel := context.WithTimeout(ctx, g.Timeout)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				err := c.Run(cctx)
				g.mu.Lock()
				delete(g.inflight, c.Name)
				g.mu.Unlock()
				done <- err
			}()
			select {
			case err := <-done:
				results <- result{i, err, time.Since(start)}
			case <-cctx.Done():
				results <- result{i, fmt.Errorf("no answer within %v", g.Timeout), time.Since(start)}
			}
		}()
	}
	errs := make([]result, len(g.Checks))
	for range g.Checks {
		r := <-results
		errs[r.i] = r
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if g.states == nil {
		g.states = map[string]*watchdogapi.CheckState{}
	}
	d := Decision{InGrace: now.Before(g.Boot.Add(g.Grace))}
	for i, c := range g.Checks {
		st := g.states[c.Name]
		ok := errs[i].err == nil
		if st == nil {
			st = &watchdogapi.CheckState{Name: c.Name, OK: !ok, Since: now}
			g.states[c.Name] = st
		}
		if st.OK != ok {
			st.Since = now
		}
		st.OK, st.Error, st.LastRun, st.Duration = ok, "", now, errs[i].dur.Seconds()
		if !ok {
			st.Error = errs[i].err.Error()
			d.Failing = append(d.Failing, *st)
		}
	}
	d.Pet = len(d.Failing) == 0 || d.InGrace
	return d
}

// States returns the latest state of every check, sorted by name.
func (g *Gate) States() []watchdogapi.CheckState {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]watchdogapi.CheckState, 0, len(g.states))
	for _, s := range g.states {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
