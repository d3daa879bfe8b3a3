package install

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// JobState is the state of a Job, for the status API.
type JobState struct {
	State   string // idle, running, done, failed
	Target  string
	Phase   string
	Done    int64
	Total   int64
	Result  string
	Error   string
	By      string
	Started time.Time
}

// Job runs at most one install to internal disk at a time in the
// background (it takes minutes on a CF card; the API answers at once and
// the dashboard polls).
type Job struct {
	// Run does the install; SelfInstall unless a test replaces it.
	Run func(ctx context.Context, o SelfOptions) (*Result, error)

	mu sync.Mutex
	st JobState
}

// Start begins installing onto target, or says why not.
func (j *Job) Start(target string, wipePerm bool, by string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.st.State == "running" {
		return fmt.Errorf("an install onto %s is already running", j.st.Target)
	}
	j.st = JobState{State: "running", Target: target, By: by, Started: time.Now()}
	run := j.Run
	if run == nil {
		run = SelfInstall
	}
	go func() {
		res, err := run(context.Background(), SelfOptions{Target: target, WipePerm: wipePerm, Progress: j.progress})
		j.mu.Lock()
		defer j.mu.Unlock()
		if err != nil {
			j.st.State, j.st.Error = "failed", err.Error()
			var re *RefusedError
			if errors.As(err, &re) {
				j.st.Error = "refused, nothing written: " + err.Error()
			}
			return
		}
		j.st.State, j.st.Result = "done", res.String()
	}()
	return nil
}

func (j *Job) progress(phase string, done, total int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.Phase, j.st.Done, j.st.Total = phase, done, total
}

// State returns a snapshot.
func (j *Job) State() JobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.st.State == "" {
		return JobState{State: "idle"}
	}
	return j.st
}

// WhyNot says why a disk may not be written, "" when it may.
func (d *Disk) WhyNot() string {
	r := d.refusals()
	if len(r) == 0 {
		return ""
	}
	return r[0]
}
