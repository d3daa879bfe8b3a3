// Package versions keeps the box's configuration versions on /perm: every
// configuration applied from afar, with who applied it, when, from where
// and why, and whether it was confirmed, is still waiting for its
// confirmation, or was reverted. The versions are what the configuration
// history shows and what a rollback goes back to.
//
// Each version is two files in the store's folder, written atomically and
// durably (internal/durable): NNNNNNNN.toml, the configuration's text,
// first, then NNNNNNNN.json, its record. A version exists once its record
// does, so a power cut at any point leaves the store with or without the
// version, never with half of one; a text whose record never came is
// removed when the store next writes. A record's state changes by an
// atomic rewrite of the record alone.
package versions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/internal/durable"
)

// State is where a version stands.
type State string

// The states of a version.
const (
	// Pending: applied with a confirm deadline, not yet confirmed; the
	// box goes back to the version it replaced when the deadline passes.
	Pending State = "pending"
	// Confirmed: applied and confirmed (or applied without a deadline);
	// the box boots on the newest confirmed version.
	Confirmed State = "confirmed"
	// Reverting: being undone, and not yet taken back by every daemon
	// (one failed to take the version before): the box tries again, and
	// reboots onto the version it boots on if that keeps failing.
	Reverting State = "reverting"
	// Reverted: applied, and then undone before it was confirmed.
	Reverted State = "reverted"
)

// Undone says the version was undone, or is being undone: it was not
// confirmed and the box goes back from it.
func (s State) Undone() bool { return s == Reverting || s == Reverted }

// Version is the record of one configuration version.
type Version struct {
	Number int       `json:"version"`
	Parent int       `json:"parent"` // the version it replaced; 0 for the first
	Time   time.Time `json:"time"`
	By     string    `json:"by"`   // who applied it
	From   string    `json:"from"` // the address it was applied from
	// Source says where the text came from when the box recorded it
	// itself (the configuration it booted on); "" for a change applied
	// from afar.
	Source   string    `json:"source,omitempty"`
	Comment  string    `json:"comment,omitempty"`
	State    State     `json:"state"`
	Deadline time.Time `json:"deadline,omitzero"` // Pending: when it reverts by itself
	// Reboot says the box took it by a reboot (and goes back by one).
	Reboot bool `json:"reboot,omitempty"`
	// Reason says why a version was reverted, or confirmed by itself.
	Reason string    `json:"reason,omitempty"`
	Done   time.Time `json:"done,omitzero"` // when it was confirmed or reverted
	SHA256 string    `json:"sha256"`        // of the text
}

// Store is the folder of versions. Its methods may be called from any
// goroutine.
type Store struct {
	dir  string
	keep int

	mu sync.Mutex
}

// DefaultKeep is how many versions a store keeps.
const DefaultKeep = 20

// Open opens the store in dir, which keeps the newest keep versions, and
// always the newest confirmed one. The folder is made by the first Add:
// a box that is never changed from afar never writes it.
func Open(dir string, keep int) (*Store, error) {
	if keep < 2 {
		return nil, fmt.Errorf("versions: keeping %d versions, want at least 2", keep)
	}
	return &Store{dir: dir, keep: keep}, nil
}

func (s *Store) path(n int, ext string) string {
	return filepath.Join(s.dir, fmt.Sprintf("%08d.%s", n, ext))
}

// List returns the versions, newest first. Records that do not read are
// named in the error, beside the versions that do.
func (s *Store) List() ([]Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, _, err := s.list()
	return out, err
}

// list reads every record, newest first. A record that does not read is
// left out and named in err, with the highest number any record has, so
// that a damaged record never blocks the next version.
func (s *Store) list() (out []Version, highest int, err error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("versions: %w", err)
	}
	var errs []error
	for _, e := range entries {
		n, ok := number(e.Name(), ".json")
		if !ok {
			continue
		}
		highest = max(highest, n)
		v, err := s.read(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Version) int { return b.Number - a.Number })
	return out, highest, errors.Join(errs...)
}

// number parses NNNNNNNN.ext.
func number(name, ext string) (int, bool) {
	base, ok := strings.CutSuffix(name, ext)
	if !ok || len(base) != 8 {
		return 0, false
	}
	n, err := strconv.Atoi(base)
	return n, err == nil && n > 0
}

func (s *Store) read(n int) (Version, error) {
	var v Version
	data, err := durable.ReadFile(s.path(n, "json"))
	if err != nil {
		return v, fmt.Errorf("versions: record of version %d: %w", n, err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("versions: record of version %d: %w", n, err)
	}
	if v.Number != n {
		return v, fmt.Errorf("versions: record %s names version %d", s.path(n, "json"), v.Number)
	}
	return v, nil
}

// Get returns version n and its text.
func (s *Store) Get(n int) (Version, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.read(n)
	if errors.Is(err, fs.ErrNotExist) {
		return v, nil, fmt.Errorf("versions: no version %d: %w", n, fs.ErrNotExist)
	}
	if err != nil {
		return v, nil, err
	}
	text, err := durable.ReadFile(s.path(n, "toml"))
	if err != nil {
		return v, nil, fmt.Errorf("versions: text of version %d: %w", n, err)
	}
	if Sum(text) != v.SHA256 {
		return v, nil, fmt.Errorf("versions: text of version %d does not match its record (SHA-256 %s, recorded %s)", n, Sum(text), v.SHA256)
	}
	return v, text, nil
}

// VersionOf is the newest version, not reverted, whose text is text: the
// version a configuration in force is. Number 0: none is. Records that do
// not read are named in err, as List does.
func (s *Store) VersionOf(text []byte) (Version, error) {
	all, err := s.List()
	sum := Sum(text)
	for _, v := range all {
		if v.SHA256 == sum && !v.State.Undone() {
			return v, err
		}
	}
	return Version{}, err
}

// Sum is the SHA-256 of a text, as records hold it.
func Sum(text []byte) string {
	h := sha256.Sum256(text)
	return hex.EncodeToString(h[:])
}

// Add records text as the next version: v's number, hash and (when
// zero) time are filled in. It returns the record as written; once it is
// written, Add succeeds, whatever the pruning of old versions meets (the
// next Add prunes again).
func (s *Store) Add(text []byte, v Version) (Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, highest, _ := s.list() // a damaged record is no reason to refuse the next version
	v.Number = highest + 1
	if err := s.makeDir(); err != nil {
		return v, err
	}
	if err := s.removeStrays(); err != nil {
		return v, err
	}
	if v.Time.IsZero() {
		v.Time = time.Now().UTC()
	}
	v.SHA256 = Sum(text)
	if err := durable.WriteFile(s.path(v.Number, "toml"), text, 0o600); err != nil {
		return v, fmt.Errorf("versions: writing version %d: %w", v.Number, err)
	}
	if err := s.write(v); err != nil {
		return v, err
	}
	s.prune(append([]Version{v}, all...))
	return v, nil
}

// write replaces the record of v.
func (s *Store) write(v Version) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(s.path(v.Number, "json"), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("versions: writing the record of version %d: %w", v.Number, err)
	}
	return nil
}

// Settle moves version n out of Pending into state (Confirmed, Reverting
// or Reverted), or out of Reverting into Reverted, saying why. Any other
// move is refused: a change is confirmed or reverted once.
func (s *Store) Settle(n int, state State, reason string) (Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.read(n)
	if err != nil {
		return v, err
	}
	switch {
	case v.State == Pending && (state == Confirmed || state == Reverting || state == Reverted):
	case v.State == Reverting && state == Reverted:
	default:
		return v, fmt.Errorf("versions: version %d is %s, and cannot be settled as %s", n, v.State, state)
	}
	v.State, v.Reason, v.Deadline = state, reason, time.Time{}
	if state != Reverting {
		v.Done = time.Now().UTC()
	}
	return v, s.write(v)
}

// Redeadline moves the deadline of pending version n to deadline: the
// box bounds a deadline it finds too far away as it starts.
func (s *Store) Redeadline(n int, deadline time.Time) (Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.read(n)
	if err != nil {
		return v, err
	}
	if v.State != Pending {
		return v, fmt.Errorf("versions: version %d is %s, not pending", n, v.State)
	}
	v.Deadline = deadline.UTC()
	return v, s.write(v)
}

// makeDir makes the store's folder when it is not there yet, and syncs
// the folder above it every time: a power cut right after an earlier
// MkdirAll must not leave the folder's entry unwritten under versions
// written since.
func (s *Store) makeDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("versions: %w", err)
	}
	return durable.SyncDir(filepath.Dir(s.dir))
}

// removeStrays removes texts whose record was never written (a power cut
// between the two) and the temporary files of writes a power cut stopped
// (dot files: the store writes nothing else under such names).
func (s *Store) removeStrays() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("versions: %w", err)
	}
	var removed bool
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
				return fmt.Errorf("versions: %w", err)
			}
			removed = true
			continue
		}
		n, ok := number(e.Name(), ".toml")
		if !ok {
			continue
		}
		if _, err := os.Stat(s.path(n, "json")); errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(s.path(n, "toml")); err != nil {
				return fmt.Errorf("versions: %w", err)
			}
			removed = true
		}
	}
	if removed {
		return durable.SyncDir(s.dir)
	}
	return nil
}

// prune removes all but the newest keep versions of all (newest first),
// and keeps the newest confirmed one whatever its age. The record goes
// first, so that a power cut leaves a stray text, not a record without
// its text. It stops at the first failure, which the next Add meets
// again; a removal that is lost to a power cut is made again then too.
func (s *Store) prune(all []Version) {
	confirmed := slices.IndexFunc(all, func(v Version) bool { return v.State == Confirmed })
	for i, v := range all {
		if i < s.keep || i == confirmed {
			continue
		}
		for _, ext := range []string{"json", "toml"} {
			if err := os.Remove(s.path(v.Number, ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return
			}
		}
	}
	durable.SyncDir(s.dir)
}
