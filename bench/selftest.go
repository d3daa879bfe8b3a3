package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"

	"github.com/ncpos/ncpos/web/api"
)

// NewSelfTest turns a configuration's report into statusd's shape: one
// result per segment (named in segments; "seg1", "seg2", ... when nil)
// and size, each with the per-stream throughput, its frame-bit rate in
// Mb/s, the loss of the trial that gave it and the mean latency. It passes
// when every size has a throughput above zero and no error (runErr) ended
// the run.
func NewSelfTest(r *Report, segments []string, runErr error) *api.SelfTest {
	st := &api.SelfTest{Started: r.Started.UTC(), Finished: r.Finished.UTC(), Passed: runErr == nil && len(r.Results) > 0}
	if segments == nil {
		for i := 0; i < max(r.Segments, 1); i++ {
			segments = append(segments, fmt.Sprintf("seg%d", i+1))
		}
	}
	for _, seg := range segments {
		for _, s := range r.Results {
			res := api.SelfTestResult{
				Segment: seg, FrameSize: s.Size,
				ThroughputPPS:  math.Round(s.ThroughputPPS * float64(max(r.Directions, 1))),
				ThroughputMbps: math.Round(BitsPerSecond(s.ThroughputPPS*float64(max(r.Directions, 1)), s.Size)/1e5) / 10,
				LossPercent:    s.LossPercent,
			}
			if s.Latency != nil && s.Latency.Samples > 0 {
				res.LatencyUS = math.Round(float64(s.Latency.Mean)/100) / 10
			}
			if s.ThroughputPPS <= 0 {
				st.Passed = false
			}
			st.Results = append(st.Results, res)
		}
	}
	st.Summary = fmt.Sprintf("RFC 2544 throughput on %s", joinNames(segments))
	if runErr != nil {
		st.Summary += ": " + runErr.Error()
	}
	return st
}

func joinNames(s []string) string {
	out := ""
	for i, n := range s {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// WriteSelfTest writes st to path (api.SelfTestFile on the appliance)
// atomically, creating its directory.
func WriteSelfTest(path string, st *api.SelfTest) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return renameio.WriteFile(path, append(b, '\n'), 0o644)
}

// SelfTestPlan is what the appliance's self-test measures: the RFC 2544
// throughput at each size through the segments a Trial's streams cross,
// one stream (one direction) per segment.
type SelfTestPlan struct {
	Segments []string      // one per stream, in the Trial's stream order
	Sizes    []int         // RFC2544Sizes when nil
	Trial    time.Duration // 2 s when 0
	LineBPS  float64       // 1 Gb/s when 0
	Path     string        // where the report goes; api.SelfTestFile when ""
	Log      io.Writer     // trial by trial; nothing when nil
	// Progress, when set, is told before each size which one it is
	// (index of len(Sizes)).
	Progress func(size, index, total int)
}

// RunSelfTest runs the throughput search of RFC 2544 against t at every
// size of the plan and writes the self-test report (WriteSelfTest), also
// when a trial fails or ctx ends, so that the dashboard shows what went
// wrong. It returns the report and the error that ended the run, if any.
func RunSelfTest(ctx context.Context, t Trial, p SelfTestPlan) (*api.SelfTest, error) {
	if len(p.Segments) == 0 {
		return nil, errors.New("self-test: no segment to measure")
	}
	if p.Sizes == nil {
		p.Sizes = RFC2544Sizes
	}
	if p.Path == "" {
		p.Path = api.SelfTestFile
	}
	for _, size := range p.Sizes {
		if err := CheckSize(size, true); err != nil {
			return nil, fmt.Errorf("self-test: %w", err)
		}
	}
	o := Options{LineBPS: p.LineBPS, Trial: p.Trial, LossSteps: []float64{}, Streams: len(p.Segments), Log: p.Log}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("self-test: %w", err)
	}
	o.defaults()
	r := &Runner{T: t, O: o}
	rep := &Report{
		Target: "appliance", Segments: len(p.Segments), Directions: 1, LineBPS: o.LineBPS, Flows: 1,
		Trial: o.Trial, Resolution: o.Resolution, Started: time.Now(),
	}
	var runErr error
	for i, size := range p.Sizes {
		if p.Progress != nil {
			p.Progress(size, i, len(p.Sizes))
		}
		sr, err := r.Size(ctx, size)
		if sr != nil && err == nil {
			rep.Results = append(rep.Results, sr)
		}
		if err != nil {
			runErr = err
			break
		}
	}
	rep.Finished = time.Now()
	// One result per segment: the throughput is per stream.
	st := NewSelfTest(rep, p.Segments, runErr)
	if err := WriteSelfTest(p.Path, st); err != nil {
		return st, errors.Join(runErr, fmt.Errorf("self-test: writing the report: %w", err))
	}
	return st, runErr
}
