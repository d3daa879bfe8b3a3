// Package selftest is the box's self-test: RFC 2544 throughput through
// each segment between the test ports the configuration cables to it
// ([selftest]), run in the background on request, its report kept for
// the dashboard and the API (GET /api/v1/selftest), and the same report
// made of a lab's bench.
package selftest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ncpos/ncpos/internal/job"
	"github.com/ncpos/ncpos/web/api"
)

// Func runs the self-test (RFC 2544 between the configured test
// ports) at sizes, nil meaning the configured ones, calls progress before
// each size and returns a one-line result. statusd wires it in; the
// report itself goes to the self-test file.
type Func func(ctx context.Context, sizes []int, progress func(size, index, total int)) (string, error)

// ErrRunning is Start's answer while a run is under way.
var ErrRunning = errors.New("a self-test is already running")

// Jobs runs the self-test in the background, one run at a time,
// and keeps the state of the last.
type Jobs struct {
	// Cabled says why the self-test cannot run here (no [selftest]
	// cabling), or nil; nil Cabled means cabled.
	Cabled func() error
	Run    Func
	// Context bounds every run; context.Background when nil.
	Context context.Context
	Now     func() time.Time // time.Now when nil

	once sync.Once
	r    job.Runner[runProgress]
}

// runProgress is how far a self-test has come.
type runProgress struct {
	Sizes       []int // of the run; nil: the configured ones
	Size        int   // being measured
	Done, Total int   // sizes
}

func (j *Jobs) runner() *job.Runner[runProgress] {
	j.once.Do(func() { j.r.Now = j.Now })
	return &j.r
}

// Ready says why the self-test cannot run here, or nil.
func (j *Jobs) Ready() error {
	if j.Run == nil {
		return errors.New("the self-test is not available here")
	}
	if j.Cabled != nil {
		return j.Cabled()
	}
	return nil
}

// Start begins a run at sizes (nil: the configured sizes) for by;
// ErrRunning while one runs.
func (j *Jobs) Start(sizes []int, by string) error {
	if err := j.Ready(); err != nil {
		return err
	}
	ctx := j.Context
	if ctx == nil {
		ctx = context.Background()
	}
	sizes = slices.Clone(sizes)
	first := runProgress{Sizes: sizes, Total: len(sizes)}
	err := j.runner().Start(ctx, by, first, func(ctx context.Context, progress func(runProgress)) (string, error) {
		last := first
		result, err := j.Run(ctx, sizes, func(size, index, total int) {
			last = runProgress{Sizes: sizes, Size: size, Done: index, Total: total}
			progress(last)
		})
		if err == nil {
			// Every size done: the configured ones when none were asked for.
			progress(runProgress{Sizes: sizes, Done: last.Total, Total: last.Total})
		}
		return result, err
	})
	if errors.Is(err, job.ErrRunning) {
		return ErrRunning
	}
	return err
}

// Job is the state of the current or last run.
func (j *Jobs) Job() api.SelfTestJob {
	st := j.runner().State()
	p := st.Progress
	out := api.SelfTestJob{State: st.State, Sizes: slices.Clone(p.Sizes), Done: p.Done, Total: p.Total,
		Result: st.Result, Error: st.Error, By: st.By}
	if st.State == job.Running {
		out.Size = p.Size
	}
	if !st.Started.IsZero() {
		out.Started = st.Started.UTC().Format(time.RFC3339)
	}
	if !st.Finished.IsZero() {
		out.Finished = st.Finished.UTC().Format(time.RFC3339)
	}
	return out
}

// Wait blocks until the running job (if any) ends, or ctx does.
func (j *Jobs) Wait(ctx context.Context) error { return j.runner().Wait(ctx) }

// Limits of a self-test request.
const (
	maxSelfTestSizes = 16
	minSelfTestFrame = 64
	maxSelfTestFrame = 9018
)

// CheckSizes refuses frame sizes the self-test does not measure.
func CheckSizes(sizes []int) error {
	if len(sizes) > maxSelfTestSizes {
		return fmt.Errorf("%d sizes, want at most %d", len(sizes), maxSelfTestSizes)
	}
	for _, n := range sizes {
		if n < minSelfTestFrame || n > maxSelfTestFrame {
			return fmt.Errorf("frame size %d: want %d to %d bytes", n, minSelfTestFrame, maxSelfTestFrame)
		}
	}
	return nil
}
