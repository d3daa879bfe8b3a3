package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

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
