package selftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/web/api"
)

// Expect says what the configuration asks of a frame size, per segment
// and direction: the frame rate, and how it was said ("95% of line rate").
type Expect func(size int) (pps float64, text string)

// SegmentReport is the RFC 2544 report of one segment and direction, or
// of both directions measured at once.
type SegmentReport struct {
	Name      string // segment
	Direction string // "LAN1 → LAN2"; may be empty
	// Reverse is the other direction ("LAN2 → LAN1") when both were
	// measured at once, each at the rate of the report's figures.
	Reverse string
	Report  *bench.Report
}

// NewReport turns the segments' reports into statusd's shape: one row
// per segment, direction and size, with the segment's own per-stream
// throughput, its frame-bit rate in Mb/s, the loss of the trial that gave
// it, the mean latency and the verdict against expect. The self-test
// passes only when every row of every size measured passed and no error
// (runErr) ended the run.
func NewReport(reps []SegmentReport, expect Expect, runErr error) *api.SelfTest {
	st := &api.SelfTest{Passed: runErr == nil && len(reps) > 0}
	var names, failed []string
	for _, sr := range reps {
		r := sr.Report
		if st.Started.IsZero() || r.Started.Before(st.Started) {
			st.Started = r.Started.UTC()
		}
		if r.Finished.After(st.Finished) {
			st.Finished = r.Finished.UTC()
		}
		name := sr.Name
		switch {
		case sr.Reverse != "":
			name += " (" + sr.Direction + " and " + sr.Reverse + " at once)"
		case sr.Direction != "":
			name += " (" + sr.Direction + ")"
		}
		names = append(names, name)
		if len(r.Results) == 0 {
			st.Passed = false
		}
		dirs := []string{sr.Direction}
		if sr.Reverse != "" {
			dirs = append(dirs, sr.Reverse)
		}
		for _, s := range r.Results {
			for k, dir := range dirs {
				row := selfTestRow(sr.Name, dir, s, k, expect)
				if row.Verdict != api.VerdictPassed {
					st.Passed = false
					where := sr.Name
					if len(dirs) > 1 {
						where += " " + dir
					}
					failed = append(failed, fmt.Sprintf("%s %d B %s", where, s.Size, row.Verdict))
				}
				st.Results = append(st.Results, row)
			}
		}
	}
	st.Verdict = testVerdict(st, runErr)
	st.Summary = "RFC 2544 throughput on " + strings.Join(names, ", ")
	if len(failed) > 0 {
		st.Summary += "; not reached: " + strings.Join(failed, ", ")
	}
	if runErr != nil {
		st.Summary += ": " + runErr.Error()
	}
	return st
}

// testVerdict is the whole test's verdict: inconclusive when nothing
// failed but something could not be measured.
func testVerdict(st *api.SelfTest, runErr error) string {
	if st.Passed {
		return api.VerdictPassed
	}
	if runErr != nil || len(st.Results) == 0 {
		return api.VerdictFailed
	}
	for _, r := range st.Results {
		if r.Verdict == api.VerdictFailed {
			return api.VerdictFailed
		}
	}
	return api.VerdictInconclusive
}

// selfTestRow is one size of one segment and direction (stream k of the
// trials, where they send both at once), with its verdict. Both
// directions share the rate (RFC 2544 offers the same load each way);
// loss and latency are the direction's own where the trials counted the
// streams apart.
func selfTestRow(segment, direction string, s *bench.SizeResult, k int, expect Expect) api.SelfTestResult {
	row := api.SelfTestResult{
		Segment: segment, Direction: direction, FrameSize: s.Size,
		ThroughputPPS:  math.Round(s.ThroughputPPS),
		ThroughputMbps: math.Round(bench.BitsPerSecond(s.ThroughputPPS, s.Size)/1e5) / 10,
		LossPercent:    s.LossPercent,
	}
	if k < len(s.StreamLossPercent) {
		row.LossPercent = s.StreamLossPercent[k]
	}
	l := s.Latency
	if k < len(s.StreamLatency) {
		l = s.StreamLatency[k]
	}
	if l != nil && l.Samples > 0 {
		usec := func(d time.Duration) float64 { return math.Round(float64(d)/100) / 10 }
		row.LatencyUS, row.LatencyRFC2544US, row.LatencyTrials = usec(l.Mean), usec(l.RFC2544), l.Trials
		row.LatencyMinUS, row.LatencyP99US, row.LatencyMaxUS = usec(l.Min), usec(l.P99), usec(l.Max)
	}
	want, text := expect(s.Size)
	row.ExpectedPPS, row.Expected = math.Round(want), text
	switch {
	case s.ThroughputPPS > 0 && s.ThroughputPPS >= want:
		row.Verdict = api.VerdictPassed
	case s.GeneratorLimited:
		// The device lost nothing of what the test port could offer:
		// the figure is a floor, and says nothing against the device.
		row.Verdict = api.VerdictInconclusive
		row.Note = fmt.Sprintf("the test port could offer no more than %.0f frames/s, below the %.0f expected", s.GeneratorPPS, want)
		if s.ThroughputPPS > 0 {
			row.Note = fmt.Sprintf("at least %.0f frames/s, lost nothing; ", s.ThroughputPPS) + row.Note
		} else {
			row.Note += "; no rate tried was offered as asked"
		}
	default:
		row.Verdict = api.VerdictFailed
	}
	return row
}

// WriteReport writes st to path (api.SelfTestFile on the appliance)
// atomically, creating its directory.
func WriteReport(path string, st *api.SelfTest) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFile(path, append(b, '\n'), 0o644)
}

// Segment is one segment and direction of the self-test, with
// the Trial that sends through it alone: each segment gets its own
// throughput search, so that a slow segment does not set the figure of the
// others.
type Segment struct {
	Name      string // segment
	Direction string // the segment ports crossed, "LAN1 → LAN2"
	// Reverse is the other direction ("LAN2 → LAN1") when T sends both
	// at once: its first stream in Direction, its second in Reverse.
	Reverse string
	T       bench.Trial
}

// Plan is what the appliance's self-test measures: the RFC 2544
// throughput at each size through each segment, and what each size must
// reach.
type Plan struct {
	Segments []Segment
	Sizes    []int         // bench.RFC2544Sizes when nil
	Trial    time.Duration // 2 s when 0
	LineBPS  float64       // 1 Gb/s when 0
	Expect   Expect        // what each size must reach; required
	// LatencyTrials at the throughput rate give each size's latency
	// (RFC 2544 §26.2: 20); no latency when 0.
	LatencyTrials int
	Path          string    // where the report goes; api.SelfTestFile when ""
	Log           io.Writer // trial by trial; nothing when nil
	// Progress, when set, is told before each size which one it is
	// (index of len(Sizes)).
	Progress func(size, index, total int)
}

// Check refuses a plan the self-test cannot run, before any frame is
// sent: no segment, a size out of range, a trial out of range, or no
// expectations.
func (p Plan) Check() error {
	if len(p.Segments) == 0 {
		return errors.New("self-test: no segment to measure")
	}
	if p.Expect == nil {
		return errors.New("self-test: no expected throughput to compare with")
	}
	for _, size := range p.Sizes {
		if err := bench.CheckSize(size, true); err != nil {
			return fmt.Errorf("self-test: %w", err)
		}
	}
	if p.Trial != 0 && (p.Trial < minSelfTestTrial || p.Trial > maxSelfTestTrial) {
		return fmt.Errorf("self-test: a trial of %v is out of range, want between %v and %v", p.Trial, minSelfTestTrial, maxSelfTestTrial)
	}
	if p.LineBPS < 0 {
		return fmt.Errorf("self-test: line rate %v b/s is not a rate", p.LineBPS)
	}
	return nil
}

// Bounds of a self-test trial: shorter trials measure the start of the
// stream more than the device, and RFC 2544 asks for 60 s at most.
const (
	minSelfTestTrial = 100 * time.Millisecond
	maxSelfTestTrial = 60 * time.Second
)

// Run runs the throughput search of RFC 2544 through every
// segment of the plan, one segment at a time, at every size, and writes
// the self-test report (WriteReport), also when a trial fails or ctx
// ends, so that the dashboard shows what went wrong. It returns the
// report and the error that ended the run, if any.
func Run(ctx context.Context, p Plan) (*api.SelfTest, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if p.Sizes == nil {
		p.Sizes = bench.RFC2544Sizes
	}
	if p.Path == "" {
		p.Path = api.SelfTestFile
	}
	o := bench.Options{LineBPS: p.LineBPS, Trial: p.Trial, LossSteps: []float64{}, Streams: 1, Log: p.Log,
		Latency: p.LatencyTrials > 0, LatencyTrials: p.LatencyTrials}
	o.Defaults()
	reps := make([]SegmentReport, len(p.Segments))
	runners := make([]*bench.Runner, len(p.Segments))
	for i, seg := range p.Segments {
		so := o
		if seg.Reverse != "" {
			so.Streams = 2
		}
		runners[i] = &bench.Runner{T: seg.T, O: so}
		reps[i] = SegmentReport{Name: seg.Name, Direction: seg.Direction, Reverse: seg.Reverse, Report: &bench.Report{
			Target: "appliance", Segments: 1, Directions: so.Streams, LineBPS: o.LineBPS, Flows: 1,
			Trial: o.Trial, Resolution: o.Resolution, Started: time.Now(),
		}}
	}
	var runErr error
sizes:
	for i, size := range p.Sizes {
		if p.Progress != nil {
			p.Progress(size, i, len(p.Sizes))
		}
		for k, r := range runners {
			if p.Log != nil {
				fmt.Fprintf(p.Log, "self-test: %d B through %s\n", size, p.Segments[k].Name)
			}
			sr, err := r.Size(ctx, size)
			if sr != nil && err == nil {
				reps[k].Report.Results = append(reps[k].Report.Results, sr)
			}
			reps[k].Report.Finished = time.Now()
			if err != nil {
				runErr = fmt.Errorf("%s, %d B: %w", p.Segments[k].Name, size, err)
				break sizes
			}
		}
	}
	st := NewReport(reps, p.Expect, runErr)
	if err := WriteReport(p.Path, st); err != nil {
		return st, errors.Join(runErr, fmt.Errorf("self-test: writing the report: %w", err))
	}
	return st, runErr
}
