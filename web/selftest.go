package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/job"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/reply"
)

// SelfTestJob is the state of the self-test job (GET /api/v1/selftest/job).
type SelfTestJob struct {
	State    string `json:"state"`           // idle, running, done, failed
	Sizes    []int  `json:"sizes,omitempty"` // frame sizes of the run
	Size     int    `json:"size,omitempty"`  // the size being measured
	Done     int    `json:"done_sizes"`      // sizes finished
	Total    int    `json:"total_sizes"`
	Result   string `json:"result,omitempty"`
	Error    string `json:"error,omitempty"`
	By       string `json:"by,omitempty"`
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
}

// SelfTestFunc runs the self-test (RFC 2544 between the configured test
// ports) at sizes, nil meaning the configured ones, calls progress before
// each size and returns a one-line result. statusd wires it in; the
// report itself goes to the self-test file.
type SelfTestFunc func(ctx context.Context, sizes []int, progress func(size, index, total int)) (string, error)

// ErrSelfTestRunning is Start's answer while a run is under way.
var ErrSelfTestRunning = errors.New("a self-test is already running")

// SelfTestJobs runs the self-test in the background, one run at a time,
// and keeps the state of the last.
type SelfTestJobs struct {
	// Ready says why the self-test cannot run here (no [selftest]
	// cabling), or nil; nil Ready means ready.
	Ready func() error
	Run   SelfTestFunc
	// Context bounds every run; context.Background when nil.
	Context context.Context
	Now     func() time.Time // time.Now when nil

	once sync.Once
	r    job.Runner[selfTestProgress]
}

// selfTestProgress is how far a self-test has come.
type selfTestProgress struct {
	Sizes       []int // of the run; nil: the configured ones
	Size        int   // being measured
	Done, Total int   // sizes
}

func (j *SelfTestJobs) runner() *job.Runner[selfTestProgress] {
	j.once.Do(func() { j.r.Now = j.Now })
	return &j.r
}

func (j *SelfTestJobs) ready() error {
	if j.Run == nil {
		return errors.New("the self-test is not available here")
	}
	if j.Ready != nil {
		return j.Ready()
	}
	return nil
}

// Start begins a run at sizes (nil: the configured sizes) for by;
// ErrSelfTestRunning while one runs.
func (j *SelfTestJobs) Start(sizes []int, by string) error {
	if err := j.ready(); err != nil {
		return err
	}
	ctx := j.Context
	if ctx == nil {
		ctx = context.Background()
	}
	sizes = slices.Clone(sizes)
	first := selfTestProgress{Sizes: sizes, Total: len(sizes)}
	err := j.runner().Start(ctx, by, first, func(ctx context.Context, progress func(selfTestProgress)) (string, error) {
		last := first
		result, err := j.Run(ctx, sizes, func(size, index, total int) {
			last = selfTestProgress{Sizes: sizes, Size: size, Done: index, Total: total}
			progress(last)
		})
		if err == nil {
			// Every size done: the configured ones when none were asked for.
			progress(selfTestProgress{Sizes: sizes, Done: last.Total, Total: last.Total})
		}
		return result, err
	})
	if errors.Is(err, job.ErrRunning) {
		return ErrSelfTestRunning
	}
	return err
}

// Job is the state of the current or last run.
func (j *SelfTestJobs) Job() SelfTestJob {
	st := j.runner().State()
	p := st.Progress
	out := SelfTestJob{State: st.State, Sizes: slices.Clone(p.Sizes), Done: p.Done, Total: p.Total,
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
func (j *SelfTestJobs) Wait(ctx context.Context) error { return j.runner().Wait(ctx) }

// Limits of a self-test request.
const (
	maxSelfTestSizes = 16
	minSelfTestFrame = 64
	maxSelfTestFrame = 9018
)

func checkSelfTestSizes(sizes []int) error {
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

func (s *Server) handleSelfTestJob(w http.ResponseWriter, r *http.Request) {
	if s.SelfTest == nil {
		reply.Error(w, http.StatusServiceUnavailable, "the self-test is not available here")
		return
	}
	job := s.SelfTest.Job()
	ready := ""
	if err := s.SelfTest.ready(); err != nil {
		ready = err.Error()
	}
	ipc.WriteJSON(w, map[string]any{"job": job, "unavailable": ready})
}

func (s *Server) handleSelfTest(w http.ResponseWriter, r *http.Request) {
	var req api.SelfTestRequest
	if r.ContentLength != 0 && !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	if s.SelfTest == nil {
		reply.Error(w, http.StatusServiceUnavailable, "the self-test is not available here")
		return
	}
	if err := checkSelfTestSizes(req.Sizes); err != nil {
		reply.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.SelfTest.ready(); err != nil {
		reply.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	by := caller.Who(r)
	if err := s.SelfTest.Start(req.Sizes, by); err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, ErrSelfTestRunning) {
			code = http.StatusConflict
		}
		reply.Error(w, code, err.Error())
		return
	}
	sizes := "configured sizes"
	if len(req.Sizes) > 0 {
		strs := make([]string, len(req.Sizes))
		for i, n := range req.Sizes {
			strs[i] = strconv.Itoa(n)
		}
		sizes = strings.Join(strs, ",") + " bytes"
	}
	s.event(events.Notice, events.KindControl, []string{"action", "selftest", "by", by},
		fmt.Sprintf("self-test (%s) started by %s", sizes, by))
	ipc.WriteJSONCode(w, http.StatusAccepted, s.SelfTest.Job())
}
