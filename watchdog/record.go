package watchdog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"golang.org/x/sys/unix"
)

// DefaultRecordDir is where watchdogd keeps its records on the appliance.
const DefaultRecordDir = "/perm/ncpos/watchdog"

// FailureRecord is written to /perm just before watchdogd stops petting, so
// that after the reset the box can say why it happened.
type FailureRecord struct {
	Reason  string    `json:"reason"` // the failing checks, see Decision.Reason
	Since   time.Time `json:"since"`  // when the first of them started failing
	Written time.Time `json:"written"`
}

// PlannedRecord is written when the appliance is stopped on purpose
// (reboot, poweroff, update).
type PlannedRecord struct {
	What string    `json:"what"`
	At   time.Time `json:"at"`
}

// Records keeps the watchdog's records in Dir. They are tiny and written
// only on failure, on purpose and once per boot, to spare the flash.
type Records struct {
	Dir string
}

func (r Records) path(name string) string { return filepath.Join(r.Dir, name) }

func (r Records) write(name string, v any) error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("watchdog records: %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// After a reset, which may be seconds away, the record is whole or
	// absent, never half-written, and the rename is on disk.
	if err := durable.WriteFile(r.path(name), b, 0o644); err != nil {
		return fmt.Errorf("watchdog records: %w", err)
	}
	return nil
}

func (r Records) read(name string, v any) (bool, error) {
	b, err := os.ReadFile(r.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", r.path(name), err)
	}
	return true, nil
}

// WriteFailure records why petting stops.
func (r Records) WriteFailure(d Decision, now time.Time) error {
	rec := FailureRecord{Reason: d.Reason(), Since: now, Written: now}
	for _, f := range d.Failing {
		if f.Since.Before(rec.Since) {
			rec.Since = f.Since
		}
	}
	return r.write("failure.json", rec)
}

// ClearFailure removes the failure record once health came back before the
// hardware reset, so that a later power cut is not blamed on it.
func (r Records) ClearFailure() error { return r.remove("failure.json") }

// remove deletes a record; one that is not there is no error.
func (r Records) remove(name string) error {
	if err := os.Remove(r.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// maxStop bounds how long after a planned stop began a failing check is
// put down to it: a stop takes well under a minute, even on a loaded box.
const maxStop = 5 * time.Minute

// ClearPlanned removes the record of a planned stop that did not happen
// (the request to reboot failed).
func (r Records) ClearPlanned() error { return r.remove("planned.json") }

// WritePlanned records a planned stop. A stop already recorded in this
// boot stays as it is: its time is when the stop began (statusd records a
// reboot before asking for it, watchdogd again when it gets SIGTERM).
func (r Records) WritePlanned(what string, now time.Time) error {
	var prev PlannedRecord
	if ok, err := r.read("planned.json", &prev); err == nil && ok {
		return nil
	}
	return r.write("planned.json", PlannedRecord{What: what, At: now})
}

// DecideLastReset combines the kernel's boot status with the records left
// by the previous boot, consumes them, and keeps the answer for this boot
// (bootID), so a restarted watchdogd reports the same.
func (r Records) DecideLastReset(bootStatus uint32, bootID string, now time.Time) (watchdogapi.LastReset, error) {
	var prev watchdogapi.LastReset
	if ok, err := r.read("last-reset.json", &prev); err == nil && ok && prev.BootID == bootID && bootID != "" {
		return prev, nil
	}
	var fail FailureRecord
	hasFail, ferr := r.read("failure.json", &fail)
	var planned PlannedRecord
	hasPlanned, perr := r.read("planned.json", &planned)

	// A check that started failing after the stop was planned failed
	// because of it (the daemons are stopped one by one, and a loaded box
	// takes a while): unless the hardware reset the box, the stop was the
	// planned one.
	stopping := hasPlanned && hasFail && !fail.Since.Before(planned.At) && fail.Since.Sub(planned.At) < maxStop
	lr := watchdogapi.LastReset{BootStatus: bootStatus, BootID: bootID, Decided: now}
	switch {
	case bootStatus&unix.WDIOF_CARDRESET != 0 || hasFail && !stopping:
		lr.Kind = "watchdog"
		lr.Detail = fail.Reason
		if !hasFail {
			lr.Detail = "no record of a failing check (watchdogd not running?)"
		}
		if bootStatus&unix.WDIOF_CARDRESET == 0 {
			lr.Detail += "; the driver did not report the reset"
		}
	case hasPlanned:
		lr.Kind = "planned " + planned.What
		lr.Detail = "requested at " + planned.At.UTC().Format(time.RFC3339)
		if stopping {
			lr.Detail += "; while stopping: " + fail.Reason
		}
	default:
		lr.Kind = "power-on"
	}
	lr.Text = lr.Kind
	if lr.Detail != "" {
		lr.Text += " (" + lr.Detail + ")"
	}
	for _, name := range []string{"failure.json", "planned.json"} {
		os.Remove(r.path(name))
	}
	if err := r.write("last-reset.json", lr); err != nil {
		return lr, err
	}
	return lr, errors.Join(ferr, perr)
}
