package selftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/web/api"
)

// lineShare expects share % of 1 Gb/s line rate at every size.
func lineShare(share float64) Expect {
	return func(size int) (float64, string) {
		return share / 100 * bench.LinePPS(size, bench.DefaultLineBPS), fmt.Sprintf("%g%% of line rate", share)
	}
}

func TestRunSelfTest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "selftest", "latest.json")
	// Two segments of different capacity, each searched on its own.
	wan := &bench.SimDevice{LineBPS: bench.DefaultLineBPS, CapacityPPS: 500000, Latency: 10 * time.Microsecond}
	lan := &bench.SimDevice{LineBPS: bench.DefaultLineBPS, CapacityPPS: 200000, Latency: 20 * time.Microsecond}
	var progress []int
	plan := Plan{
		Segments: []Segment{{Name: "wan", Direction: "LAN1 → LAN2", T: wan}, {Name: "lan", Direction: "LAN3 → LAN4", T: lan}},
		Sizes:    []int{64, 1518}, Trial: 100 * time.Millisecond, Path: path, Expect: lineShare(95), LatencyTrials: 2,
		Progress: func(size, i, n int) { progress = append(progress, size) },
	}
	st, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Results) != 4 || len(progress) != 2 {
		t.Fatalf("report %+v, progress %v: want 4 results, 2 sizes", st, progress)
	}
	capacity := map[string]float64{"wan": 500000, "lan": 200000}
	for _, r := range st.Results {
		want := math.Min(capacity[r.Segment], bench.LinePPS(r.FrameSize, bench.DefaultLineBPS))
		if math.Abs(r.ThroughputPPS-want)/want > 0.02 {
			t.Errorf("%s %d B: %.0f frames/s, want about %.0f", r.Segment, r.FrameSize, r.ThroughputPPS, want)
		}
		// Latency per segment, RFC 2544's over the 2 trials: the sim's
		// fixed latency plus a mean spread of 4.995 µs.
		wantLat := map[string]float64{"wan": 15, "lan": 25}[r.Segment]
		if r.LatencyTrials != 2 || math.Abs(r.LatencyRFC2544US-wantLat) > 0.01 || r.LatencyMinUS > r.LatencyUS || r.LatencyP99US > r.LatencyMaxUS {
			t.Errorf("%s %d B: latency %v µs over %d trials (min %v, mean %v, p99 %v, max %v), want %v over 2", r.Segment, r.FrameSize,
				r.LatencyRFC2544US, r.LatencyTrials, r.LatencyMinUS, r.LatencyUS, r.LatencyP99US, r.LatencyMaxUS, wantLat)
		}
		// 64 B: 95 % of line rate is 1.41 Mpps, above both; 1518 B:
		// 77 kpps, below both.
		wantVerdict := api.VerdictPassed
		if r.FrameSize == 64 {
			wantVerdict = api.VerdictFailed
		}
		if r.Verdict != wantVerdict || r.Expected != "95% of line rate" || math.Abs(r.ExpectedPPS-0.95*bench.LinePPS(r.FrameSize, bench.DefaultLineBPS)) > 1 {
			t.Errorf("%s %d B: verdict %s against %.0f (%s), want %s", r.Segment, r.FrameSize, r.Verdict, r.ExpectedPPS, r.Expected, wantVerdict)
		}
	}
	if st.Passed || !strings.Contains(st.Summary, "not reached: wan 64 B FAILED, lan 64 B FAILED") {
		t.Errorf("a run with failed sizes: passed %v, summary %q", st.Passed, st.Summary)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back api.SelfTest
	if err := json.Unmarshal(b, &back); err != nil || !strings.HasPrefix(back.Summary, "RFC 2544 throughput on wan (LAN1 → LAN2), lan (LAN3 → LAN4)") {
		t.Fatalf("written report %s: %v", b, err)
	}

	// What the configuration expects decides: 300 kpps at 64 B passes
	// wan and fails lan.
	plan.Expect = func(size int) (float64, string) {
		if size == 64 {
			return 300000, "300kpps"
		}
		return lineShare(95)(size)
	}
	st, err = Run(context.Background(), plan)
	if err != nil || st.Passed || st.Results[0].Verdict != api.VerdictPassed || st.Results[2].Verdict != api.VerdictFailed { // rows are wan 64, wan 1518, lan 64, lan 1518
		t.Errorf("64 B against 300 kpps: %+v, %v", st, err)
	}
	plan.Expect = func(size int) (float64, string) { return 150000, "150kpps" }
	plan.Sizes = []int{64}
	if st, err = Run(context.Background(), plan); err != nil || !st.Passed {
		t.Errorf("64 B against 150 kpps: %+v, %v", st, err)
	}

	// A test port that cannot offer the expected rate gives no verdict
	// against the device.
	slowGen := &bench.SimDevice{LineBPS: bench.DefaultLineBPS, CapacityPPS: 1e7, GeneratorPPS: 400000}
	st, err = Run(context.Background(), Plan{Segments: []Segment{{Name: "wan", T: slowGen}},
		Sizes: []int{64}, Trial: 100 * time.Millisecond, Path: path, Expect: lineShare(95)})
	if err != nil || st.Passed || st.Results[0].Verdict != api.VerdictInconclusive || !strings.Contains(st.Results[0].Note, "test port could offer no more than 400000 frames/s") {
		t.Errorf("generator-limited: %+v, %v", st, err)
	}
	// A test port far slower than the line (an emulated one, an Atom
	// making 64-byte frames): the search goes below what it offers, and
	// the row gives the highest rate verified as a floor, inconclusive
	// still.
	for _, gen := range []float64{8774, 400000} {
		slowGen = &bench.SimDevice{LineBPS: bench.DefaultLineBPS, CapacityPPS: 1e7, GeneratorPPS: gen}
		st, err = Run(context.Background(), Plan{Segments: []Segment{{Name: "wan", T: slowGen}},
			Sizes: []int{64}, Trial: 100 * time.Millisecond, Path: path, Expect: lineShare(95)})
		if err != nil {
			t.Fatal(err)
		}
		row := st.Results[0]
		t.Logf("a test port that offers %.0f frames/s: %s, %.0f frames/s: %s", gen, row.Verdict, row.ThroughputPPS, row.Note)
		floor := fmt.Sprintf("at least %.0f frames/s, lost nothing; the test port could offer no more than ", row.ThroughputPPS)
		if st.Passed || row.Verdict != api.VerdictInconclusive || row.ThroughputPPS < 0.85*gen || row.ThroughputPPS > gen || !strings.HasPrefix(row.Note, floor) {
			t.Errorf("a test port that offers %.0f frames/s: %s %.0f fps, %q", gen, row.Verdict, row.ThroughputPPS, row.Note)
		}
	}

	// A run that ends early still leaves a report, failed, saying why.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err = Run(ctx, Plan{Segments: []Segment{{Name: "wan", T: wan}}, Sizes: []int{64}, Path: path, Expect: lineShare(1)})
	if err == nil || st == nil || st.Passed || !strings.Contains(st.Summary, "context canceled") {
		t.Fatalf("cancelled run: %+v, %v", st, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"passed": false`) {
		t.Errorf("cancelled run wrote %s", b)
	}
}

// TestSelfTestPlanCheck: bad plans are refused before any trial runs.
func TestSelfTestPlanCheck(t *testing.T) {
	dev := &bench.SimDevice{LineBPS: bench.DefaultLineBPS, CapacityPPS: 1e6}
	seg := []Segment{{Name: "wan", T: dev}}
	for _, tc := range []struct {
		plan Plan
		want string
	}{
		{Plan{Segments: seg, Sizes: []int{63}, Expect: lineShare(1)}, "63"},
		{Plan{Segments: seg, Sizes: []int{9019}, Expect: lineShare(1)}, "9019"},
		{Plan{Sizes: []int{64}, Expect: lineShare(1)}, "no segment"},
		{Plan{Segments: seg, Sizes: []int{64}}, "no expected throughput"},
		{Plan{Segments: seg, Sizes: []int{64}, Trial: 10 * time.Millisecond, Expect: lineShare(1)}, "a trial of 10ms is out of range"},
		{Plan{Segments: seg, Sizes: []int{64}, Trial: 2 * time.Minute, Expect: lineShare(1)}, "a trial of 2m0s is out of range"},
	} {
		tc.plan.Path = filepath.Join(t.TempDir(), "latest.json")
		_, err := Run(context.Background(), tc.plan)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plan %+v: %v, want an error with %q", tc.plan, err, tc.want)
		}
		if _, serr := os.Stat(tc.plan.Path); serr == nil {
			t.Errorf("plan %+v refused, but a report was written", tc.plan)
		}
	}
	if dev.Trials != 0 {
		t.Errorf("%d trials ran for refused plans", dev.Trials)
	}
}

// TestRunSelfTestBothDirections: a segment measured both ways at once
// gives a row per direction, each at the rate both directions passed.
func TestRunSelfTestBothDirections(t *testing.T) {
	dev := &bench.SimDevice{LineBPS: bench.DefaultLineBPS, CapacityPPS: 300000, Streams: 2, Latency: 10 * time.Microsecond}
	plan := Plan{
		Segments: []Segment{{Name: "wan", Direction: "LAN1 → LAN2", Reverse: "LAN2 → LAN1", T: dev}},
		Sizes:    []int{64, 1518}, Trial: 100 * time.Millisecond, Path: filepath.Join(t.TempDir(), "latest.json"),
		Expect: func(int) (float64, string) { return 250000, "250kpps" },
	}
	st, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range st.Results {
		want := math.Min(300000, bench.LinePPS(r.FrameSize, bench.DefaultLineBPS))
		// Within the search's resolution, 1 % of line rate.
		if math.Abs(r.ThroughputPPS-want) > 0.01*bench.LinePPS(r.FrameSize, bench.DefaultLineBPS) {
			t.Errorf("%s %d B: %.0f frames/s per direction, want about %.0f", r.Direction, r.FrameSize, r.ThroughputPPS, want)
		}
		got = append(got, fmt.Sprintf("%s %s %d %s", r.Segment, r.Direction, r.FrameSize, r.Verdict))
	}
	want := []string{"wan LAN1 → LAN2 64 PASSED", "wan LAN2 → LAN1 64 PASSED", "wan LAN1 → LAN2 1518 FAILED", "wan LAN2 → LAN1 1518 FAILED"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if st.Passed || !strings.HasPrefix(st.Summary, "RFC 2544 throughput on wan (LAN1 → LAN2 and LAN2 → LAN1 at once); not reached: wan LAN1 → LAN2 1518 B FAILED, wan LAN2 → LAN1 1518 B FAILED") {
		t.Errorf("passed %v, summary %q", st.Passed, st.Summary)
	}
}

// twoWays is a device taking both directions at once, the second slower
// (50 µs against 10 µs) and, above 200000 frames/s, losing a tenth of its
// frames; its trials count the streams apart as PortTarget's do.
type twoWays struct{}

func (twoWays) Run(_ context.Context, spec bench.TrialSpec) (bench.TrialResult, error) {
	n := uint64(spec.RatePPS * spec.Duration.Seconds())
	lost := uint64(0)
	if spec.RatePPS > 200000 {
		lost = n / 10
	}
	res := bench.TrialResult{Independent: -1, Elapsed: spec.Duration}
	for k, lat := range []time.Duration{10 * time.Microsecond, 50 * time.Microsecond} {
		c := bench.StreamCount{Sent: n, Received: n}
		if k == 1 {
			c.Received -= lost
		}
		if spec.Latency {
			h := &xdptraffic.Histogram{}
			h.Add(xdptraffic.Histogram{Count: c.Received, Sum: time.Duration(c.Received) * lat, Min: lat, Max: lat})
			c.LatencyHist = h
			if res.LatencyHist == nil {
				res.LatencyHist = &xdptraffic.Histogram{}
			}
			res.LatencyHist.Add(*h)
		}
		res.Sent += c.Sent
		res.Received += c.Received
		res.PerStream = append(res.PerStream, c)
	}
	return res, nil
}

// TestSelfTestRowsPerDirection: with both directions at once, each
// direction's row has its own latency, not the two directions' mean.
func TestSelfTestRowsPerDirection(t *testing.T) {
	plan := Plan{
		Segments: []Segment{{Name: "wan", Direction: "LAN1 → LAN2", Reverse: "LAN2 → LAN1", T: twoWays{}}},
		Sizes:    []int{64}, Trial: 100 * time.Millisecond, LatencyTrials: 2, Path: filepath.Join(t.TempDir(), "latest.json"),
		Expect: func(int) (float64, string) { return 150000, "150kpps" },
	}
	st, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Results) != 2 {
		t.Fatalf("%d rows, want one per direction", len(st.Results))
	}
	for i, want := range []float64{10, 50} {
		r := st.Results[i]
		if r.LatencyRFC2544US != want || r.LatencyMinUS != want || r.LatencyTrials != 2 {
			t.Errorf("%s: latency %.1f µs (min %.1f) over %d trials, want %.0f µs over 2", r.Direction, r.LatencyRFC2544US, r.LatencyMinUS, r.LatencyTrials, want)
		}
		if r.LossPercent != 0 || r.ThroughputPPS > 200000 || r.ThroughputPPS < 190000 {
			t.Errorf("%s: %.0f frames/s, loss %.3f %%, want just under 200000 without loss", r.Direction, r.ThroughputPPS, r.LossPercent)
		}
	}
}

// A test whose sizes the tester's own generator limited is inconclusive,
// not failed; one below the expected rate at any size has failed.
func TestSelfTestVerdict(t *testing.T) {
	expect := func(int) (float64, string) { return 1000, "1000 pps" }
	report := func(sizes ...*bench.SizeResult) []SegmentReport {
		return []SegmentReport{{Name: "seg1", Direction: "LAN1 → LAN2", Report: &bench.Report{Results: sizes}}}
	}
	passed := &bench.SizeResult{Size: 1518, ThroughputPPS: 1200}
	limited := &bench.SizeResult{Size: 64, ThroughputPPS: 400, GeneratorLimited: true}
	low := &bench.SizeResult{Size: 512, ThroughputPPS: 400}
	for _, tc := range []struct {
		name   string
		reps   []SegmentReport
		runErr error
		want   string
	}{
		{"all passed", report(passed), nil, api.VerdictPassed},
		{"every size generator-limited", report(limited, limited), nil, api.VerdictInconclusive},
		{"limited and passed", report(limited, passed), nil, api.VerdictInconclusive},
		{"one size too slow", report(limited, low, passed), nil, api.VerdictFailed},
		{"a run that broke off", report(limited), errors.New("carrier lost"), api.VerdictFailed},
		{"no results", report(), nil, api.VerdictFailed},
	} {
		st := NewReport(tc.reps, expect, tc.runErr)
		if st.Verdict != tc.want || st.Passed != (tc.want == api.VerdictPassed) {
			t.Errorf("%s: verdict %s (passed %v), want %s: %s", tc.name, st.Verdict, st.Passed, tc.want, st.Summary)
		}
	}
}

// TestReport: a bench's report becomes a self-test report, written
// where statusd reads it, with every field the API documents.
func TestReport(t *testing.T) {
	// One segment's report, as a bench of a simulated device gives it.
	dev := &bench.SimDevice{LineBPS: 1e9, CapacityBPS: 600e6, Streams: 1, Latency: 9 * time.Microsecond}
	r := &bench.Runner{T: dev, O: bench.Options{Streams: 1, Resolution: 0.5, LossSteps: []float64{}, Latency: true}}
	rep := &bench.Report{Target: "sim", Segments: 1, Directions: 1, LineBPS: 1e9, Flows: 1, Trial: 2 * time.Second, Resolution: 0.5,
		Started: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Finished: time.Date(2026, 5, 1, 12, 5, 0, 0, time.UTC)}
	for _, size := range bench.RFC2544Sizes {
		sr, err := r.Size(context.Background(), size)
		if err != nil {
			t.Fatal(err)
		}
		rep.Results = append(rep.Results, sr)
	}
	st := NewReport([]SegmentReport{{Name: "seg1", Report: rep}}, func(int) (float64, string) { return 1000, "1kpps" }, nil)
	path := filepath.Join(t.TempDir(), "selftest", "latest.json")
	if err := WriteReport(path, st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"started", "finished", "passed", "summary", "results"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	res := m["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"segment", "frame_size", "throughput_pps", "throughput_mbps", "loss_percent", "latency_us", "expected_pps", "expected", "verdict"} {
		if _, ok := res[k]; !ok {
			t.Errorf("no %q in a result", k)
		}
	}
	if !st.Passed || st.Summary != "RFC 2544 throughput on seg1" || len(st.Results) != 7 || st.Results[0].LatencyUS != 14 { // 9 µs + a mean queue of 5 µs
		t.Errorf("self-test %+v", st)
	}
}
