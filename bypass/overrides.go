package bypass

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/internal/durable"
)

// DefaultOverrideFile keeps manual overrides on /perm: an override set for
// a maintenance window must outlast a bypassd restart and a reboot, and it
// is written only when an override is set, cleared or expires, so it costs
// the card nothing while the box runs.
const DefaultOverrideFile = "/perm/ncpos/bypass-overrides.json"

// overrideFile is the file's content.
type overrideFile struct {
	Overrides map[string]bypassapi.Override `json:"overrides"`
}

// readOverrides reads the file; none is no overrides.
func readOverrides(path string) (map[string]bypassapi.Override, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading overrides: %w", err)
	}
	var f overrideFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("overrides file %s: %w", path, err)
	}
	return f.Overrides, nil
}

// saveOverrides writes every pair's override in force, atomically, with mu
// held. A failure is logged: the overrides still hold in memory.
func (s *Supervisor) saveOverrides(now time.Time) {
	path := s.opts.Overrides
	if path == "" {
		return
	}
	f := overrideFile{Overrides: map[string]bypassapi.Override{}}
	for _, p := range s.pairs {
		if p.dec == nil {
			continue
		}
		if o := p.dec.Override(); o != nil {
			f.Overrides[p.Name] = *o
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = durable.WriteFile(path, append(b, '\n'), 0o644)
		}
	}
	if err != nil {
		s.logf(bypassapi.Entry{Time: now, Kind: "error", Cause: fmt.Sprintf("keeping the overrides on %s: %v (they hold until bypassd stops)", path, err)})
	}
}

// inForce says whether saved holds an override for pair that has not
// expired at now, so that Start does not adopt a relay into normal that
// an operator wanted elsewhere.
func inForce(saved map[string]bypassapi.Override, pair string, now time.Time) bool {
	o, ok := saved[pair]
	return ok && (o.Expires.IsZero() || now.Before(o.Expires))
}

// restoreOverrides puts the kept overrides (saved, as read from the file,
// or the error reading it) back in force at start, with mu held; expired
// ones are dropped and logged.
func (s *Supervisor) restoreOverrides(now time.Time, saved map[string]bypassapi.Override, err error) {
	if s.opts.Overrides == "" {
		return
	}
	if err != nil {
		s.logf(bypassapi.Entry{Time: now, Kind: "error", Cause: err.Error() + " (starting without overrides)"})
		return
	}
	names := make([]string, 0, len(saved))
	for n := range saved {
		names = append(names, n)
	}
	sort.Strings(names)
	changed := false
	for _, name := range names {
		o := saved[name]
		var p *pairState
		for _, q := range s.pairs {
			if q.Name == name {
				p = q
			}
		}
		switch {
		case p == nil:
			s.logf(bypassapi.Entry{Time: now, Kind: "override", Cause: fmt.Sprintf("kept override for %s dropped: no such pair", name)})
			changed = true
		case !o.Expires.IsZero() && !now.Before(o.Expires):
			s.logf(bypassapi.Entry{Time: now, Pair: name, Kind: "override", Cause: fmt.Sprintf("kept override to %s (%s) had expired", o.State, o.Reason)})
			changed = true
		case p.Backend != nil && !p.caps.Can(o.State):
			s.logf(bypassapi.Entry{Time: now, Pair: name, Kind: "override", Cause: fmt.Sprintf("kept override to %s dropped: the pair cannot be set to it", o.State)})
			changed = true
		default:
			p.dec.SetOverride(o)
			s.logf(bypassapi.Entry{Time: now, Pair: name, Kind: "override", Cause: fmt.Sprintf("override to %s restored from %s: %s", o.State, s.opts.Overrides, o.Reason)})
		}
	}
	if changed {
		s.saveOverrides(now)
	}
}
