package bypass

import (
	"encoding/json"
	"errors"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/internal/durable"
)

// Journal keeps the transition log in memory (the last Keep entries) and
// appends it to a file on /perm as JSON lines. The file is capped: when a
// line would take it over Cap bytes, it becomes <file>.1 (replacing the
// previous one) and a new file starts, so the log takes at most twice Cap
// of the flash. Transitions are rare, so flash wear is too.
type Journal struct {
	Path string // "" keeps the log in memory only
	Cap  int64
	Keep int
	Logf func(format string, args ...any) // default log.Printf

	mu      sync.Mutex
	entries []bypassapi.Entry
	fileErr error // last problem writing the file, reported once
}

// DefaultJournalPath is where bypassd appends its transition log.
const DefaultJournalPath = "/perm/ncpos/bypass.log"

// newJournal returns a journal appending to path (may be "").
func newJournal(path string, capBytes int64) *Journal {
	if capBytes <= 0 {
		capBytes = 256 << 10
	}
	return &Journal{Path: path, Cap: capBytes, Keep: 512}
}

// Add records e.
func (j *Journal) Add(e bypassapi.Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	keep := j.Keep
	if keep <= 0 {
		keep = 512
	}
	j.entries = append(j.entries, e)
	if len(j.entries) > keep {
		j.entries = append([]bypassapi.Entry(nil), j.entries[len(j.entries)-keep:]...)
	}
	logf := j.Logf
	if logf == nil {
		logf = log.Printf
	}
	logf("bypass: %s", e)
	if j.Path == "" {
		return
	}
	if err := j.appendFile(e); err != nil {
		if j.fileErr == nil || j.fileErr.Error() != err.Error() {
			logf("bypass: transition log %s: %v (keeping it in memory)", j.Path, err)
		}
		j.fileErr = err
	} else {
		j.fileErr = nil
	}
}

func (j *Journal) appendFile(e bypassapi.Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if st, err := os.Stat(j.Path); err == nil && st.Size()+int64(len(line)) > j.Cap {
		if err := durable.Rename(j.Path, j.Path+".1"); err != nil {
			return err
		}
	} else if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(j.Path), 0o755); err != nil {
			return err
		}
	}
	// Relay changes are rare; each is on disk before the next.
	return durable.Append(j.Path, line, 0o644)
}

// Entries returns the last n entries (all with n <= 0), oldest first.
func (j *Journal) Entries(n int) []bypassapi.Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n <= 0 || n > len(j.entries) {
		n = len(j.entries)
	}
	return append([]bypassapi.Entry(nil), j.entries[len(j.entries)-n:]...)
}
