package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
)

// SelfTestPath is where statusd looks for the latest self-test report
// (web/API.md, "Self-test report").
const SelfTestPath = "/perm/ncpos/selftest/latest.json"

// SelfTest is the report statusd shows.
type SelfTest struct {
	Started  time.Time        `json:"started"`
	Finished time.Time        `json:"finished"`
	Passed   bool             `json:"passed"`
	Summary  string           `json:"summary"`
	Results  []SelfTestResult `json:"results"`
}

// SelfTestResult is one segment at one frame size.
type SelfTestResult struct {
	Segment        string  `json:"segment"`
	FrameSize      int     `json:"frame_size"`
	ThroughputPPS  float64 `json:"throughput_pps"`
	ThroughputMbps float64 `json:"throughput_mbps"`
	LossPercent    float64 `json:"loss_percent"`
	LatencyUS      float64 `json:"latency_us"`
}

// NewSelfTest turns a configuration's report into statusd's shape: one
// result per segment (named in segments; "seg1", "seg2", ... when nil)
// and size, each with the per-stream throughput, its frame-bit rate in
// Mb/s, the loss of the trial that gave it and the mean latency. It passes
// when every size has a throughput above zero and no error (runErr) ended
// the run.
func NewSelfTest(r *Report, segments []string, runErr error) *SelfTest {
	st := &SelfTest{Started: r.Started.UTC(), Finished: r.Finished.UTC(), Passed: runErr == nil && len(r.Results) > 0}
	if segments == nil {
		for i := 0; i < max(r.Segments, 1); i++ {
			segments = append(segments, fmt.Sprintf("seg%d", i+1))
		}
	}
	for _, seg := range segments {
		for _, s := range r.Results {
			res := SelfTestResult{
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

// WriteSelfTest writes st to path (SelfTestPath on the appliance)
// atomically, creating its directory.
func WriteSelfTest(path string, st *SelfTest) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return renameio.WriteFile(path, append(b, '\n'), 0o644)
}
