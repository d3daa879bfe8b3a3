// Package job runs one long task at a time in the background and keeps
// the state of the last, so that an API can answer at once and a
// dashboard poll: installing to internal disk (minutes on a CF card) and
// the self-test both run this way.
package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// States of a job.
const (
	Idle    = "idle"
	Running = "running"
	Done    = "done"
	Failed  = "failed"
)

// State is the current or last run of a task whose progress is a P.
type State[P any] struct {
	State    string // Idle, Running, Done or Failed
	Progress P      // as the task last reported it
	Result   string // the task's one-line result
	Error    string
	By       string // who started it
	Started  time.Time
	Finished time.Time
}

// ErrRunning is Start's answer while a run is under way.
var ErrRunning = errors.New("already running")

// Runner runs tasks one at a time. The zero Runner is ready.
type Runner[P any] struct {
	// Now is time.Now when nil.
	Now func() time.Time

	mu   sync.Mutex
	st   State[P]
	done chan struct{} // closed when the running task ends
}

func (r *Runner[P]) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Start runs task in the background under ctx for by, with first as its
// progress until it reports its own; ErrRunning while a run is under way.
// A task that panics fails with the panic as its error.
func (r *Runner[P]) Start(ctx context.Context, by string, first P, task func(ctx context.Context, progress func(P)) (string, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.State == Running {
		return ErrRunning
	}
	r.st = State[P]{State: Running, Progress: first, By: by, Started: r.now()}
	done := make(chan struct{})
	r.done = done
	go func() {
		defer close(done)
		progress := func(p P) {
			r.mu.Lock()
			r.st.Progress = p
			r.mu.Unlock()
		}
		var (
			result string
			err    error
		)
		func() {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("crashed: %v", v)
				}
			}()
			result, err = task(ctx, progress)
		}()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.st.Result, r.st.Finished = result, r.now()
		if err != nil {
			r.st.State, r.st.Error = Failed, err.Error()
			return
		}
		r.st.State = Done
	}()
	return nil
}

// State is a snapshot of the current or last run; State Idle before the
// first.
func (r *Runner[P]) State() State[P] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.State == "" {
		return State[P]{State: Idle}
	}
	return r.st
}

// Wait blocks until the running task (if any) ends, or ctx does.
func (r *Runner[P]) Wait(ctx context.Context) error {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
