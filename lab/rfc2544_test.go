package lab_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/lab"
	"github.com/ncpos/ncpos/web/selftest"
)

// TestRFC2544Targets runs a short RFC 2544 throughput search (two sizes, short
// trials, coarse resolution) over AF_XDP through forwarderd and through a
// Linux bridge, and checks every trial's analyzer count against the
// receiving veth's kernel counter: within 5 %. The figures are printed,
// not asserted.
func TestRFC2544Targets(t *testing.T) {
	requireLab(t)
	var reports []*bench.Report
	for _, target := range []string{lab.TargetForwarder, lab.TargetBridge} {
		t.Run(target, func(t *testing.T) {
			lt, err := lab.NewTarget(lab.TargetOptions{Target: target, Forwarderd: forwarderdBin, RunDir: t.TempDir(), Flows: 256})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := lt.Close(); err != nil {
					t.Errorf("closing the lab: %v", err)
				}
			})
			var log bytes.Buffer
			o := bench.Options{Trial: 300 * time.Millisecond, Resolution: 12.5, LossSteps: []float64{}, Latency: true, Streams: lt.Streams(), Log: &log}
			r := &bench.Runner{T: lt, O: o}
			rep := &bench.Report{Target: target, Segments: 1, Directions: 1, LineBPS: bench.DefaultLineBPS, Flows: 256, Trial: o.Trial, Resolution: o.Resolution, Started: time.Now()}
			for _, size := range []int{64, 1518} {
				sr, err := r.Size(context.Background(), size)
				if err != nil {
					t.Fatal(err)
				}
				rep.Results = append(rep.Results, sr)
				for _, tr := range sr.Trials {
					if tr.AgreementPct == nil {
						t.Errorf("%d B trial at %.1f%%: no independent count", size, tr.RatePercent)
						continue
					}
					// A trial where the analyzer's own socket dropped
					// (the CPU is shared) must still account for every
					// frame the sink counted: received + dropped.
					if tr.TesterDrops > 0 {
						acc := float64(tr.Received + tr.TesterDrops)
						if d := 100 * math.Abs(float64(*tr.Independent)-acc) / acc; d > 5 {
							t.Errorf("%d B %s trial at %.1f%%: analyzer %d + dropped %d, %s %d: %.2f%% apart",
								size, tr.Test, tr.RatePercent, tr.Received, tr.TesterDrops, tr.IndependentName, *tr.Independent, d)
						}
						continue
					}
					if *tr.AgreementPct > 5 || math.IsNaN(*tr.AgreementPct) {
						t.Errorf("%d B %s trial at %.1f%%: analyzer %d, %s %d: %.2f%% apart (limit 5%%)",
							size, tr.Test, tr.RatePercent, tr.Received, tr.IndependentName, *tr.Independent, *tr.AgreementPct)
					}
					if tr.Sent == 0 {
						t.Errorf("%d B trial sent nothing", size)
					}
				}
			}
			rep.Finished = time.Now()
			t.Logf("traffic: %v", lt.Engines())
			t.Logf("trials (analyzer count vs %s):\n%s", bench.IndependentName, log.String())
			reports = append(reports, rep)
		})
	}
	var tab bytes.Buffer
	bench.WriteTable(&tab, reports...)
	t.Logf("\n%s", tab.String())
}

// TestPortsSelfTest runs the appliance's self-test (PortTarget on plain
// interfaces, RunSelfTest) in a lab whose segment a Linux bridge joins:
// the generator and analyzer sit on the lab's traffic ends as they sit on
// the test ports of an appliance. The figures are not asserted, only that
// frames crossed and the report was written.
func TestPortsSelfTest(t *testing.T) {
	requireLab(t)
	l, err := lab.New(lab.Config{ID: "s" + strconv.FormatInt(int64(rand.IntN(36*36)), 36), Segments: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	if _, err := l.Bridge(0); err != nil {
		t.Fatal(err)
	}
	seg := l.Segments[0]
	pt, err := bench.NewPorts([]bench.PortStream{{
		Name:     "seg0",
		Sender:   bench.PortEnd{Ifname: seg.HostIfs[0], NS: seg.Hosts[0]},
		Receiver: bench.PortEnd{Ifname: seg.HostIfs[1], NS: seg.Hosts[1]},
	}}, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pt.Close(); err != nil {
			t.Errorf("closing the ports: %v", err)
		}
	})
	path := filepath.Join(t.TempDir(), "latest.json")
	// The bar is low: this shows the appliance's path end to end on the
	// lab's bridge, whose figures the benchmarks print; 5 % of line rate
	// is far above what a broken path (nothing through) gives.
	expect := func(size int) (float64, string) {
		return 0.05 * bench.LinePPS(size, bench.DefaultLineBPS), "5% of line rate"
	}
	st, err := selftest.Run(context.Background(), selftest.Plan{
		Segments: []selftest.Segment{{Name: "seg0", Direction: "p0 → p1", T: pt}},
		Sizes:    []int{64, 1518}, Trial: 200 * time.Millisecond, Path: path, Expect: expect,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("traffic: %v", pt.Engines())
	for _, r := range st.Results {
		t.Logf("%s %4d B: %.0f frames/s, %.1f Mb/s: %s against %s", r.Segment, r.FrameSize, r.ThroughputPPS, r.ThroughputMbps, r.Verdict, r.Expected)
	}
	if !st.Passed || len(st.Results) != 2 {
		t.Errorf("report %+v: want passed with 2 results", st)
	}
}

// TestRFC2544BothDirections sends both directions of a segment at once
// through forwarderd: each traffic end sends one stream and receives the
// other, and every trial's analyzer count is checked against the
// receiving veths' kernel counters.
func TestRFC2544BothDirections(t *testing.T) {
	requireLab(t)
	lt, err := lab.NewTarget(lab.TargetOptions{Target: lab.TargetForwarder, Forwarderd: forwarderdBin, RunDir: t.TempDir(), Flows: 16, Directions: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lt.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	if lt.Streams() != 2 {
		t.Fatalf("%d streams, want 2", lt.Streams())
	}
	// A light trial first: 2 % of line rate each way, which any working
	// path carries; each direction must have arrived.
	res, err := lt.Run(context.Background(), bench.TrialSpec{Size: 64, RatePPS: 0.02 * bench.LinePPS(64, bench.DefaultLineBPS), Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2 %% each way: %+v, %s %d", res.PerStream, res.IndependentName, res.Independent)
	if len(res.PerStream) != 2 {
		t.Fatalf("counts of %d streams, want 2", len(res.PerStream))
	}
	for i, c := range res.PerStream {
		if c.Sent == 0 || c.Received < c.Sent*3/4 {
			t.Errorf("direction %d: sent %d, received %d", i, c.Sent, c.Received)
		}
	}
	if res.Independent < int64(res.Received) {
		t.Errorf("the analyzers counted %d frames, the receiving veths %d", res.Received, res.Independent)
	}
	var log bytes.Buffer
	o := bench.Options{Trial: 300 * time.Millisecond, Resolution: 12.5, LossSteps: []float64{}, Streams: 2, Log: &log}
	r := &bench.Runner{T: lt, O: o}
	sr, err := r.Size(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range sr.Trials {
		if tr.AgreementPct == nil || *tr.AgreementPct > 5 {
			t.Errorf("trial at %.1f%%: analyzers %d, %s %v", tr.RatePercent, tr.Received, tr.IndependentName, tr.Independent)
		}
	}
	rep := &bench.Report{Target: lab.TargetForwarder, Segments: 1, Directions: 2, LineBPS: bench.DefaultLineBPS, Flows: 16, Trial: o.Trial, Resolution: o.Resolution,
		Results: []*bench.SizeResult{sr}}
	var tab bytes.Buffer
	bench.WriteTable(&tab, rep)
	t.Logf("traffic: %v\ntrials:\n%s\n%s", lt.Engines(), log.String(), tab.String())
}
