package install

import (
	"context"
	"errors"
	"fmt"

	"github.com/ncpos/ncpos/internal/job"
)

// Progress is how far an install to internal disk has come.
type Progress struct {
	Target string
	Phase  string // writing, verifying
	Done   int64  // bytes
	Total  int64
}

// Job runs at most one install to internal disk at a time in the
// background (it takes minutes on a CF card; the API answers at once and
// the dashboard polls).
type Job struct {
	// Run does the install; SelfInstall unless a test replaces it.
	Run func(ctx context.Context, o SelfOptions) (*Result, error)

	r job.Runner[Progress]
}

// Start begins installing onto target, or says why not.
func (j *Job) Start(target string, wipePerm bool, by string) error {
	run := j.Run
	if run == nil {
		run = selfInstall
	}
	err := j.r.Start(context.Background(), by, Progress{Target: target}, func(ctx context.Context, progress func(Progress)) (string, error) {
		res, err := run(ctx, SelfOptions{Target: target, WipePerm: wipePerm, Progress: func(phase string, done, total int64) {
			progress(Progress{Target: target, Phase: phase, Done: done, Total: total})
		}})
		var re *RefusedError
		if errors.As(err, &re) {
			return "", fmt.Errorf("refused, nothing written: %w", err)
		}
		if err != nil {
			return "", err
		}
		return res.String(), nil
	})
	if errors.Is(err, job.ErrRunning) {
		return fmt.Errorf("an install onto %s is already running", j.r.State().Progress.Target)
	}
	return err
}

// State returns a snapshot.
func (j *Job) State() job.State[Progress] { return j.r.State() }

// WhyNot says why a disk may not be written, "" when it may.
func (d *Disk) WhyNot() string {
	r := d.refusals()
	if len(r) == 0 {
		return ""
	}
	return r[0]
}
