package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/frames"
)

func TestLineRate(t *testing.T) {
	for _, c := range []struct {
		size int
		bps  float64
		want uint64
	}{
		{64, 1e9, 1488095}, {128, 1e9, 844594}, {256, 1e9, 452898}, {512, 1e9, 234962},
		{1024, 1e9, 119731}, {1280, 1e9, 96153}, {1518, 1e9, 81274},
		{64, 10e9, 14880952}, {1518, 10e9, 812743}, {64, 100e6, 148809},
	} {
		if got := linePPSInt(c.size, c.bps); got != c.want {
			t.Errorf("LinePPSInt(%d, %g) = %d, want %d", c.size, c.bps, got, c.want)
		}
	}
	// 1,488,095 64-byte frames/s are 761.9 Mb/s of frames (API.md's example).
	if got := BitsPerSecond(1488095, 64) / 1e6; math.Abs(got-761.9) > 0.05 {
		t.Errorf("BitsPerSecond(1488095, 64) = %.2f Mb/s, want 761.9", got)
	}
	if got := PercentOfLine(LinePPS(512, 1e9)/2, 512, 1e9); math.Abs(got-50) > 1e-9 {
		t.Errorf("PercentOfLine = %v, want 50", got)
	}
}

func TestCheckArguments(t *testing.T) {
	for _, c := range []struct {
		size  int
		jumbo bool
		ok    bool
		msg   string
	}{
		{63, false, false, "below the Ethernet minimum"}, {64, false, true, ""}, {1518, false, true, ""},
		{1519, false, false, "need -jumbo"}, {9000, true, true, ""}, {9019, true, false, "jumbo maximum"},
	} {
		err := CheckSize(c.size, c.jumbo)
		if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("CheckSize(%d, %v) = %v", c.size, c.jumbo, err)
		}
	}
	if err := CheckRate(LinePPS(64, 1e9), 64, 1e9); err != nil {
		t.Errorf("line rate refused: %v", err)
	}
	if err := CheckRate(1488097, 64, 1e9); err == nil || !strings.Contains(err.Error(), "above the line rate") {
		t.Errorf("CheckRate above line rate = %v", err)
	}
	if err := (Options{MaxRate: 101}).Check(); err == nil {
		t.Error("max rate 101% accepted")
	}
	if err := (Options{AcceptableLoss: -1}).Check(); err == nil {
		t.Error("negative loss accepted")
	}
}

func TestFrames(t *testing.T) {
	for _, size := range RFC2544Sizes {
		b, err := NewBuilder(FrameSpec{Size: size, Flows: 1000, Stream: 3})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2048)
		seen := map[string]bool{}
		for seq := uint32(0); seq < 2000; seq++ {
			f := b.Write(buf, 7, seq, uint64(seq)*1000)
			if len(f) != size-4 {
				t.Fatalf("%d: frame of %d bytes", size, len(f))
			}
			if frames.Checksum(f[14:34]) != 0 {
				t.Fatalf("%d: bad IPv4 checksum", size)
			}
			if got := int(f[16])<<8 | int(f[17]); got != size-4-14 {
				t.Fatalf("%d: IP length %d", size, got)
			}
			st, err := ParseStamp(f)
			if err != nil || st != (Stamp{Trial: 7, Seq: seq, Time: uint64(seq) * 1000, Stream: 3}) {
				t.Fatalf("%d: stamp %+v, %v", size, st, err)
			}
			seen[string(f[26:38])] = true // addresses and ports
		}
		if len(seen) != 1000 {
			t.Errorf("%d: %d distinct flows, want 1000", size, len(seen))
		}
	}
	if _, err := ParseStamp(make([]byte, 60)); err == nil {
		t.Error("zero frame parsed")
	}
	if _, err := NewBuilder(FrameSpec{Size: 60}); err == nil {
		t.Error("60-byte frames built")
	}
}

func TestLatency(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Microsecond)
	}
	got := Latency(ds)
	want := LatencyStats{Samples: 100, Min: time.Microsecond, Max: 100 * time.Microsecond, Mean: 50500 * time.Nanosecond, P99: 99 * time.Microsecond}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Latency = %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(Latency(nil), LatencyStats{}) {
		t.Error("empty latency not zero")
	}
}

// TestThroughputSearch: against simulated devices of known capacity the
// search lands within the resolution below it.
func TestThroughputSearch(t *testing.T) {
	for _, c := range []struct {
		name      string
		dev       SimDevice
		opts      Options
		wantPct   float64 // expected throughput, % of line rate
		limited   bool
		wantZeros bool
		wantGen   float64 // % of line the generator offered at the search's bound; 0: not checked
	}{
		{"line rate", SimDevice{CapacityPPS: 1e9}, Options{}, 100, false, false, 0},
		{"37.3% capacity", SimDevice{CapacityPPS: 0.373 * LinePPS(64, 1e9)}, Options{Resolution: 0.1}, 37.3, false, false, 0},
		{"half, resolution 2", SimDevice{CapacityPPS: 0.5 * LinePPS(64, 1e9)}, Options{Resolution: 2}, 50, false, false, 0},
		{"two streams", SimDevice{CapacityPPS: 0.62 * LinePPS(64, 1e9), Streams: 2}, Options{Resolution: 0.5, Streams: 2}, 62, false, false, 0},
		{"0.5% random loss, none accepted", SimDevice{CapacityPPS: 1e9, LossPercent: 0.5}, Options{}, 0, false, true, 0},
		{"0.5% random loss, 1% accepted", SimDevice{CapacityPPS: 0.8 * LinePPS(64, 1e9), LossPercent: 0.5}, Options{AcceptableLoss: 1, Resolution: 0.25}, 80.4, false, false, 0},
		{"generator limited", SimDevice{CapacityPPS: 1e9, GeneratorPPS: 0.7 * LinePPS(64, 1e9)}, Options{}, 70, true, false, 0},
		// Rates the generator cannot offer bound the search from above
		// until the device's own loss does.
		{"generator short of line rate, above the capacity", SimDevice{CapacityPPS: 0.6 * LinePPS(64, 1e9), GeneratorPPS: 0.8 * LinePPS(64, 1e9)}, Options{}, 60, false, false, 0},
		// A generator that slips once: the trial is run again, and the
		// search goes on as if it had not.
		{"generator slips once", SimDevice{CapacityPPS: 1e9, GeneratorSlips: []float64{1.2}}, Options{}, 100, false, false, 0},
		// Spoiled every time: the rate bounds the search, whose result
		// is marked; the attempt nearest the rate asked counts.
		{"generator slips three times", SimDevice{CapacityPPS: 1e9, GeneratorSlips: []float64{2, 0.5, 1}}, Options{}, 99.2, true, false, 99.5},
		{"generator slips twice, one retry", SimDevice{CapacityPPS: 1e9, GeneratorSlips: []float64{1.2, 1.2}}, Options{Retries: 1}, 99.2, true, false, 98.8},
		{"generator slips, no retry", SimDevice{CapacityPPS: 1e9, GeneratorSlips: []float64{1.2}}, Options{Retries: -1}, 99.2, true, false, 98.8},
		// Further off than a stall: the generator's limit, not run again.
		{"generator 8% short once", SimDevice{CapacityPPS: 1e9, GeneratorSlips: []float64{8}}, Options{}, 99.2, true, false, 92},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.dev.LineBPS = 1e9
			c.opts.LossSteps = []float64{}
			r := &Runner{T: &c.dev, O: c.opts}
			sr, err := r.Size(context.Background(), 64)
			if err != nil {
				t.Fatal(err)
			}
			r.O.Defaults()
			got := sr.PercentLine
			if c.wantZeros {
				if got > r.O.Resolution {
					t.Errorf("throughput %.3f%%, want about 0", got)
				}
				return
			}
			// Loss accepted up to 1 % lets the device pass slightly
			// above its capacity: (1-x/c)... within the resolution of
			// the expected figure either way.
			if math.Abs(got-c.wantPct) > r.O.Resolution+0.01 {
				t.Errorf("throughput %.3f%% of line rate, want %.3f%% ± %.3g", got, c.wantPct, r.O.Resolution)
			}
			if sr.GeneratorLimited != c.limited {
				t.Errorf("generator limited = %v", sr.GeneratorLimited)
			}
			if !c.limited && got > c.wantPct+0.01 && c.opts.AcceptableLoss == 0 {
				t.Errorf("throughput %.3f%% above the capacity %.3f%%", got, c.wantPct)
			}
			// Binary search: about log2(100/res)+1 rates tried.
			type tried struct {
				rate     float64
				attempts []TrialRecord
			}
			var rates []tried
			for _, tr := range sr.Trials {
				if n := len(rates); n > 0 && rates[n-1].rate == tr.RatePPS {
					rates[n-1].attempts = append(rates[n-1].attempts, tr)
				} else {
					rates = append(rates, tried{tr.RatePPS, []TrialRecord{tr}})
				}
			}
			if maxRates := int(math.Ceil(math.Log2(r.O.MaxRate/r.O.Resolution))) + 2; len(rates) > maxRates {
				t.Errorf("%d rates tried, want at most %d", len(rates), maxRates)
			}
			// A rate is tried again only after a stall: passed, short of
			// the rate asked by no more than 5 %, at most Retries times.
			for _, rt := range rates {
				if len(rt.attempts) > 1+max(r.O.Retries, 0) {
					t.Errorf("%.0f frames/s tried %d times", rt.rate, len(rt.attempts))
				}
				for _, a := range rt.attempts[:len(rt.attempts)-1] {
					if !a.Passed || a.OfferedPPS >= rt.rate*(1-r.O.GeneratorTolerance/100) || a.OfferedPPS < rt.rate*0.95 {
						t.Errorf("%.0f frames/s tried again after an attempt that offered %.0f (passed %v)", rt.rate, a.OfferedPPS, a.Passed)
					}
				}
			}
			var spoiled int
			for _, tr := range sr.Trials {
				if tr.Invalid != "" {
					spoiled++
				}
			}
			if len(c.dev.GeneratorSlips) > 0 && spoiled != len(c.dev.GeneratorSlips) {
				t.Errorf("%d trials recorded as spoiled, want %d (every attempt recorded)", spoiled, len(c.dev.GeneratorSlips))
			}
			if c.wantGen > 0 {
				if want := LinePPS(64, 1e9) * c.wantGen / 100; math.Abs(sr.GeneratorPPS-want) > 1 {
					t.Errorf("the generator's rate at the bound %.0f, want %.0f (the attempt nearest the rate asked)", sr.GeneratorPPS, want)
				}
			}
		})
	}
}

func TestLossSweepLatencyBackToBack(t *testing.T) {
	line := LinePPS(256, 1e9)
	dev := &SimDevice{LineBPS: 1e9, CapacityPPS: 0.6 * line, BufferFrames: 500, Latency: 12 * time.Microsecond}
	r := &Runner{T: dev, O: Options{Latency: true, B2BMax: 20000, B2BRepeat: 2, Trial: time.Second}}
	sr, err := r.Size(context.Background(), 256)
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.FrameLoss) != 10 || sr.FrameLoss[0].RatePercent != 100 || sr.FrameLoss[9].RatePercent != 10 {
		t.Fatalf("frame-loss steps %+v", sr.FrameLoss)
	}
	for _, p := range sr.FrameLoss {
		want := 0.0
		if p.RatePercent > 60 {
			want = 100 * (1 - 60/p.RatePercent)
		}
		if math.Abs(p.LossPercent-want) > 0.01 {
			t.Errorf("loss at %.0f%% = %.3f%%, want %.3f%%", p.RatePercent, p.LossPercent, want)
		}
	}
	if sr.Latency == nil || sr.Latency.Min != 12*time.Microsecond || sr.Latency.P99 < sr.Latency.Mean || sr.Latency.Max < sr.Latency.P99 {
		t.Errorf("latency %+v", sr.Latency)
	}
	// A burst of n frames at line rate passes while n*(1-0.6) <= 500:
	// the longest is 1250 frames.
	if b := sr.BackToBack; b == nil || b.Frames < 1250-200 || b.Frames > 1250 {
		t.Errorf("back-to-back %+v, want 1250 frames within 200 (1%% of 20000)", sr.BackToBack)
	}
}

func sampleReports() []*Report {
	var out []*Report
	for segs := 1; segs <= 2; segs++ {
		dev := &SimDevice{LineBPS: 1e9, CapacityBPS: 600e6 / float64(segs), Streams: segs, Latency: 9 * time.Microsecond}
		r := &Runner{T: dev, O: Options{Streams: segs, Resolution: 0.5, LossSteps: []float64{}, Latency: true}}
		rep := &Report{Target: "sim", Segments: segs, Directions: 1, LineBPS: 1e9, Flows: 1, Trial: 2 * time.Second, Resolution: 0.5,
			Started: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Finished: time.Date(2026, 5, 1, 12, 5, 0, 0, time.UTC)}
		for _, size := range RFC2544Sizes {
			sr, err := r.Size(context.Background(), size)
			if err != nil {
				panic(err)
			}
			rep.Results = append(rep.Results, sr)
		}
		out = append(out, rep)
	}
	return out
}

func TestReports(t *testing.T) {
	reps := sampleReports()
	var tab bytes.Buffer
	if err := WriteTable(&tab, reps...); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tab.String())
	for _, want := range []string{"sim, 1 segment;", "sim, 2 segments;", "1488095", "81274", "% line", "Gbps", "Mpps", "Throughput by configuration"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	// 1518 bytes: a device of 600 Mb/s of frames forwards 49407 fps,
	// 60.79% of 81274; the 64-byte row is 100% (600 Mb/s > 761.9 Mb/s? no: 1171875 fps, 78.75%).
	r1518 := reps[0].find(1518)
	if math.Abs(r1518.PercentLine-60.79) > 0.5 || math.Abs(r1518.Mbps-600) > 6 {
		t.Errorf("1518: %.2f%%, %.1f Mb/s", r1518.PercentLine, r1518.Mbps)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, reps...); err != nil {
		t.Fatal(err)
	}
	var back struct{ Reports []*Report }
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Reports) != 2 || len(back.Reports[1].Results) != 7 {
		t.Fatalf("JSON round trip: %v", err)
	}
	var cs bytes.Buffer
	if err := WriteCSV(&cs, reps...); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil || len(rows) != 1+14 || len(rows[1]) != len(csvHeader) {
		t.Fatalf("CSV: %d rows, %v", len(rows), err)
	}
	var svg bytes.Buffer
	if err := WriteSVG(&svg, reps...); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg.Bytes(), new(struct{})); err != nil {
		t.Fatalf("SVG is not XML: %v", err)
	}
	if n := strings.Count(svg.String(), "<polyline"); n != 2 {
		t.Errorf("%d lines in the chart, want 2", n)
	}
}

// slowingTrial adds one more microsecond to every frame's latency at each
// latency trial, so that the trials' latencies differ.
type slowingTrial struct {
	*SimDevice
	n int
}

func (s *slowingTrial) Run(ctx context.Context, spec TrialSpec) (TrialResult, error) {
	res, err := s.SimDevice.Run(ctx, spec)
	if spec.Latency {
		for i := range res.Latencies {
			res.Latencies[i] += time.Duration(s.n) * time.Microsecond
		}
		s.n++
	}
	return res, err
}

// TestLatencyRFC2544: §26.2's latency is the average over the latency
// trials, run at the throughput rate, of each trial's latency.
func TestLatencyRFC2544(t *testing.T) {
	dev := &slowingTrial{SimDevice: &SimDevice{LineBPS: 1e9, CapacityPPS: 500000, Latency: 10 * time.Microsecond}}
	r := &Runner{T: dev, O: Options{Latency: true, LatencyTrials: 20, LossSteps: []float64{}, Trial: 100 * time.Millisecond}}
	sr, err := r.Size(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	l := sr.Latency
	// Trial i's frames: 10 µs + i µs + a spread of 0..9.99 µs (mean
	// 4.995 µs); the average over i = 0..19 adds 9.5 µs.
	want := 10*time.Microsecond + 9500*time.Nanosecond + 4995*time.Nanosecond
	if l == nil || l.Trials != 20 || l.RFC2544 != want || math.Abs(l.RatePPS-sr.asked) > 1e-9 {
		t.Fatalf("latency %+v, want %v over 20 trials at %.0f frames/s", l, want, sr.asked)
	}
	if l.Min != 10*time.Microsecond || l.Max < l.P99 || l.P99 < l.Mean {
		t.Errorf("min/mean/p99/max %v/%v/%v/%v", l.Min, l.Mean, l.P99, l.Max)
	}
}

// TestRecordSaysHowFarBehind: a trial whose generator fell short names the
// rate it missed by and, where the generator says, how far behind its
// schedule it fell; one that kept the rate is not invalid, whatever its lag.
func TestRecordSaysHowFarBehind(t *testing.T) {
	r := &Runner{O: Options{LineBPS: 1e9, GeneratorTolerance: 0.1, Streams: 1, Log: io.Discard}}
	spec := TrialSpec{Size: 64, RatePPS: 1e6, Duration: time.Second}
	for _, c := range []struct {
		name   string
		res    TrialResult
		behind float64
		want   string
	}{
		{"short, lag known", TrialResult{Sent: 980000, Received: 980000, Elapsed: time.Second, Behind: 4500 * time.Microsecond},
			4.5, "offered -2.00% off the rate asked, the generator up to 4.5 ms behind its schedule"},
		{"short, lag not known", TrialResult{Sent: 980000, Received: 980000, Elapsed: time.Second}, 0, "offered -2.00% off the rate asked"},
		{"caught up", TrialResult{Sent: 1000000, Received: 1000000, Elapsed: time.Second, Behind: 6 * time.Millisecond}, 6, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sr SizeResult
			rec := r.record(&sr, "throughput", spec, c.res, true)
			if rec.Invalid != c.want {
				t.Errorf("invalid %q, want %q", rec.Invalid, c.want)
			}
			if rec.BehindMs != c.behind {
				t.Errorf("behind %v ms, want %v", rec.BehindMs, c.behind)
			}
			if got := r.spoiled(rec, spec.RatePPS); got != (c.want != "") {
				t.Errorf("spoiled %v, want %v", got, c.want != "")
			}
		})
	}
}
