package health

import (
	"sync"
	"time"
)

// Tracker remembers since when each condition has held, so that a daemon
// can work its conditions out afresh at every look and still report when
// each began. A condition that goes away and comes back starts anew.
type Tracker struct {
	// Source is the daemon that reports the conditions.
	Source string
	// Changed, if set, is told of each condition that begins (raised)
	// and each that ends, once, in the order Update sees them: for the
	// daemon's log.
	Changed func(c Condition, raised bool)

	mu    sync.Mutex
	since map[string]time.Time
	held  map[string]Condition // the last seen of each, for Changed
}

// Update takes the conditions that hold at now (their Since is ignored
// unless set) and returns them with Since set to when each began and
// Source set, sorted.
func (t *Tracker) Update(now time.Time, conds []Condition) []Condition {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := make(map[string]time.Time, len(conds))
	out := make([]Condition, 0, len(conds))
	for _, c := range conds {
		k := c.Key()
		if _, dup := next[k]; dup {
			continue
		}
		if old, ok := t.since[k]; ok {
			c.Since = old
		} else if c.Since.IsZero() {
			c.Since = now.UTC()
		}
		if c.Source == "" {
			c.Source = t.Source
		}
		next[k] = c.Since
		out = append(out, c)
	}
	if t.Changed != nil {
		held := make(map[string]Condition, len(out))
		for _, c := range out {
			if _, ok := t.held[c.Key()]; !ok {
				t.Changed(c, true)
			}
			held[c.Key()] = c
		}
		var gone []Condition
		for k, c := range t.held {
			if _, ok := held[k]; !ok {
				gone = append(gone, c)
			}
		}
		Sort(gone)
		for _, c := range gone {
			t.Changed(c, false)
		}
		t.held = held
	}
	t.since = next
	Sort(out)
	return out
}
