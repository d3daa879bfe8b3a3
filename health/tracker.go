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

	mu    sync.Mutex
	since map[string]time.Time
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
	t.since = next
	Sort(out)
	return out
}
