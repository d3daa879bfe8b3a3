package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

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
