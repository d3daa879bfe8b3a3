package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bench/xdptraffic"
)

// Options are the parameters of the RFC 2544 procedures.
type Options struct {
	LineBPS        float64       // nominal line rate of each port; 1 Gb/s when 0
	Trial          time.Duration // length of a throughput trial; 2 s when 0 (RFC 2544: 60 s)
	Resolution     float64       // search stops when the interval is this narrow, in % of line rate; 1 when 0
	AcceptableLoss float64       // % of frames a passing trial may lose; 0 = none (RFC 2544)
	MaxRate        float64       // highest rate tried, % of line rate; 100 when 0
	Streams        int           // streams a trial sends (directions × segments); 1 when 0
	// LossSteps are the rates of the frame-loss test in % of line rate,
	// from the highest; 100, 90, ... 10 when nil.
	LossSteps []float64
	// BackToBack: the longest burst tried (frames), the number of bursts
	// the result must pass (RFC 2544: 50); no back-to-back test when
	// B2BMax is 0.
	B2BMax, B2BRepeat int
	Latency           bool // measure latency at the throughput rate
	LatencyTrials     int  // RFC 2544: 20; 1 when 0
	// GeneratorTolerance is how far (in %) the rate offered may be off
	// the rate asked before the trial is marked invalid; 0.1 when 0.
	GeneratorTolerance float64
	// Retries is how many times the throughput search runs a trial
	// again that the tester spoiled by a moment's stall (see spoiled):
	// it says nothing of the device. Every attempt is recorded. 2 when
	// 0; none when negative.
	Retries int
	Log     io.Writer // progress, trial by trial; nothing when nil
}

// Defaults fills in what o leaves zero.
func (o *Options) Defaults() {
	if o.LineBPS <= 0 {
		o.LineBPS = DefaultLineBPS
	}
	if o.Trial <= 0 {
		o.Trial = 2 * time.Second
	}
	if o.Resolution <= 0 {
		o.Resolution = 1
	}
	if o.MaxRate <= 0 {
		o.MaxRate = 100
	}
	if o.Streams <= 0 {
		o.Streams = 1
	}
	if o.LossSteps == nil {
		for r := 100.0; r >= 10; r -= 10 {
			o.LossSteps = append(o.LossSteps, r)
		}
	}
	if o.LatencyTrials <= 0 {
		o.LatencyTrials = 1
	}
	if o.GeneratorTolerance <= 0 {
		o.GeneratorTolerance = 0.1
	}
	if o.Retries == 0 {
		o.Retries = 2
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Check validates options before any traffic.
func (o Options) Check() error {
	o.Defaults()
	switch {
	case o.MaxRate > 100:
		return fmt.Errorf("maximum rate %.4g%% is above line rate", o.MaxRate)
	case o.Resolution >= o.MaxRate:
		return fmt.Errorf("resolution %.4g%% is not below the maximum rate %.4g%%", o.Resolution, o.MaxRate)
	case o.AcceptableLoss < 0 || o.AcceptableLoss >= 100:
		return fmt.Errorf("acceptable loss %.4g%% is not in [0, 100)", o.AcceptableLoss)
	}
	for _, s := range o.LossSteps {
		if s <= 0 || s > 100 {
			return fmt.Errorf("frame-loss rate %.4g%% is not in (0, 100] of line rate", s)
		}
	}
	return nil
}

// TrialRecord is one trial as the report keeps it.
type TrialRecord struct {
	Test        string  `json:"test"` // throughput, latency, loss, b2b
	RatePercent float64 `json:"rate_percent"`
	RatePPS     float64 `json:"rate_pps"`    // asked, per stream
	OfferedPPS  float64 `json:"offered_pps"` // achieved, per stream
	Burst       int     `json:"burst,omitempty"`
	Sent        uint64  `json:"sent"`
	Received    uint64  `json:"received"`
	LossPercent float64 `json:"loss_percent"`
	Passed      bool    `json:"passed"`
	// Independent count of the received frames, and how far it is from
	// Received in %; absent without one.
	Independent     *int64   `json:"independent,omitempty"`
	IndependentName string   `json:"independent_name,omitempty"`
	AgreementPct    *float64 `json:"agreement_percent,omitempty"`
	TesterDrops     uint64   `json:"tester_drops,omitempty"`
	// TxDropped are frames the generator made that its port did not
	// transmit; they are not counted as sent.
	TxDropped uint64 `json:"tx_dropped,omitempty"`
	// BehindMs is, for a paced generator that says, the furthest behind
	// its schedule it fell in ms (xdptraffic.Sent.MaxLag); not kept for
	// bursts, which are sent at line rate.
	BehindMs float64 `json:"generator_behind_ms,omitempty"`
	// Duplicates and Foreign are frames that arrived again and frames
	// of other streams or trials: not in Received.
	Duplicates uint64 `json:"duplicates,omitempty"`
	Foreign    uint64 `json:"foreign,omitempty"`
	// Invalid says why the trial does not measure the device: the rate
	// offered was off the rate asked, or the sending port dropped.
	Invalid string `json:"invalid,omitempty"`
}

// SizeResult is every figure measured at one frame size.
type SizeResult struct {
	Size          int     `json:"frame_size"`
	LinePPS       float64 `json:"line_pps"`
	ThroughputPPS float64 `json:"throughput_pps"` // per stream, as offered in the best passing trial
	PercentLine   float64 `json:"percent_line"`
	Mbps          float64 `json:"throughput_mbps"`
	LossPercent   float64 `json:"loss_percent"` // of the trial that gave the throughput
	// GeneratorLimited: the search's upper bound was a rate the tester
	// could not offer (GeneratorPPS is what it offered there), not a
	// loss: the throughput is a floor of the device's capacity.
	GeneratorLimited bool          `json:"generator_limited,omitempty"`
	GeneratorPPS     float64       `json:"generator_pps,omitempty"`
	Latency          *LatencyStats `json:"latency,omitempty"`
	// StreamLatency and StreamLossPercent are each stream's latency and
	// loss (of the trial that gave the throughput), in the order of the
	// target's streams, where a trial sends more than one and the
	// target counts them apart: both directions at once, say.
	StreamLatency     []*LatencyStats `json:"stream_latency,omitempty"`
	StreamLossPercent []float64       `json:"stream_loss_percent,omitempty"`
	FrameLoss         []LossPoint     `json:"frame_loss,omitempty"`
	BackToBack        *BackToBack     `json:"back_to_back,omitempty"`
	Trials            []TrialRecord   `json:"trials"`

	asked float64 // the rate asked of the generator in the trial that gave the throughput
}

// LossPoint is one rate of the frame-loss test.
type LossPoint struct {
	RatePercent float64 `json:"rate_percent"`
	LossPercent float64 `json:"loss_percent"`
}

// BackToBack is the longest burst at line rate passed without loss.
type BackToBack struct {
	Frames  int     `json:"frames"`
	Seconds float64 `json:"seconds"` // its length on the wire
	Repeats int     `json:"repeats"`
}

// Runner runs the procedures of RFC 2544 against a Trial.
type Runner struct {
	T Trial
	O Options
}

func (r *Runner) record(sr *SizeResult, test string, spec TrialSpec, res TrialResult, passed bool) TrialRecord {
	rec := TrialRecord{
		Test: test, RatePPS: spec.RatePPS, OfferedPPS: res.OfferedPPS(r.O.Streams), Burst: spec.Burst,
		RatePercent: PercentOfLine(spec.RatePPS, spec.Size, r.O.LineBPS),
		Sent:        res.Sent, Received: res.Received, LossPercent: res.LossPercent(), Passed: passed,
		TesterDrops: res.TesterDrops, TxDropped: res.TxDropped, Duplicates: res.Duplicates, Foreign: res.Foreign,
	}
	if spec.Burst == 0 {
		rec.BehindMs = float64(res.Behind) / float64(time.Millisecond)
	}
	if off := 100 * (rec.OfferedPPS/spec.RatePPS - 1); spec.Burst == 0 && spec.RatePPS > 0 && math.Abs(off) > r.O.GeneratorTolerance {
		rec.Invalid = fmt.Sprintf("offered %+.2f%% off the rate asked", off)
		if off < 0 && rec.BehindMs > 0 {
			rec.Invalid += fmt.Sprintf(", the generator up to %.1f ms behind its schedule", rec.BehindMs)
		}
	}
	if res.TxDropped > 0 {
		rec.Invalid = strings.TrimPrefix(rec.Invalid+fmt.Sprintf("; the sending port dropped %d frames", res.TxDropped), "; ")
	}
	if res.Independent >= 0 {
		n, a := res.Independent, res.Agreement()
		rec.Independent, rec.AgreementPct, rec.IndependentName = &n, &a, res.IndependentName
	}
	sr.Trials = append(sr.Trials, rec)
	ind := ""
	if rec.Independent != nil {
		ind = fmt.Sprintf("  %s %d (%.2f%% apart)", rec.IndependentName, *rec.Independent, *rec.AgreementPct)
	}
	if rec.TesterDrops > 0 {
		ind += fmt.Sprintf("  analyzer dropped %d", rec.TesterDrops)
	}
	if rec.Invalid != "" {
		ind += "  invalid: " + rec.Invalid
	}
	verdict := "fail"
	if passed {
		verdict = "pass"
	}
	if spec.Burst > 0 {
		fmt.Fprintf(r.O.Log, "  %4d B  %-10s burst %7d          sent %9d  received %9d  loss %6.3f%%  %s%s\n",
			spec.Size, test, spec.Burst, rec.Sent, rec.Received, rec.LossPercent, verdict, ind)
	} else {
		fmt.Fprintf(r.O.Log, "  %4d B  %-10s %6.2f%% (%9.0f fps, offered %9.0f)  sent %9d  received %9d  loss %6.3f%%  %s%s\n",
			spec.Size, test, rec.RatePercent, spec.RatePPS, rec.OfferedPPS, rec.Sent, rec.Received, rec.LossPercent, verdict, ind)
	}
	return rec
}

func (r *Runner) run(ctx context.Context, spec TrialSpec) (TrialResult, error) {
	if err := ctx.Err(); err != nil {
		return TrialResult{}, err
	}
	res, err := r.T.Run(ctx, spec)
	if err != nil {
		return res, fmt.Errorf("trial at %.0f frames/s of %d bytes: %w", spec.RatePPS, spec.Size, err)
	}
	return res, nil
}

// spoiled says whether a trial proves nothing of the device at the rate
// asked: it lost nothing, but of less than was asked (its generator fell
// short, or its sending port dropped frames). A trial with loss is the
// device's failure either way.
func (r *Runner) spoiled(rec TrialRecord, asked float64) bool {
	short := rec.OfferedPPS < asked*(1-r.O.GeneratorTolerance/100)
	return rec.Passed && (short || rec.TxDropped > 0)
}

// throughputTrial runs spec for the throughput search and records it. A
// trial the tester spoiled by a moment's stall (its generator came within
// retryWithin of the rate asked) is run again, up to Retries times; one
// further off met the generator's limit, which another run does not move.
// Every attempt is recorded; the one that offered nearest the rate asked
// counts.
func (r *Runner) throughputTrial(ctx context.Context, sr *SizeResult, spec TrialSpec) (TrialResult, TrialRecord, error) {
	var (
		best    TrialResult
		bestRec TrialRecord
	)
	for attempt := 0; ; attempt++ {
		res, err := r.run(ctx, spec)
		if err != nil {
			return res, TrialRecord{}, err
		}
		rec := r.record(sr, "throughput", spec, res, r.passes(res))
		if attempt == 0 || r.nearer(rec, bestRec, spec.RatePPS) {
			best, bestRec = res, rec
		}
		if !r.spoiled(bestRec, spec.RatePPS) {
			return best, bestRec, nil
		}
		stall := spec.RatePPS > 0 && rec.OfferedPPS >= spec.RatePPS*(1-retryWithin)
		if !stall || attempt >= max(r.O.Retries, 0) {
			fmt.Fprintf(r.O.Log, "  %4d B  throughput the tester could not offer this rate (%s): the search goes on below it\n", spec.Size, bestRec.Invalid)
			return best, bestRec, nil
		}
		fmt.Fprintf(r.O.Log, "  %4d B  throughput the tester stalled (%s): run again\n", spec.Size, rec.Invalid)
	}
}

// floorShare is the share of what a generator offered in a spoiled trial
// at which the throughput search tries next: below it enough that the
// generator, whose reach varies from trial to trial, offers what is
// asked. floorTries bounds such tries in one search.
const (
	floorShare = 0.9
	floorTries = 3
)

// retryWithin is how near the rate asked a spoiled trial's generator
// must have come for the trial to be run again: a stall of 100 ms in a
// trial of 2 s costs 5 %.
const retryWithin = 0.05

// nearer says whether a is a better attempt than b at the rate asked: one
// that proves something over a spoiled one, else the one that offered
// nearer it.
func (r *Runner) nearer(a, b TrialRecord, asked float64) bool {
	if sa, sb := r.spoiled(a, asked), r.spoiled(b, asked); sa != sb {
		return !sa
	}
	return math.Abs(a.OfferedPPS-asked) < math.Abs(b.OfferedPPS-asked)
}

func (r *Runner) passes(res TrialResult) bool {
	return res.Sent > 0 && res.LossPercent() <= r.O.AcceptableLoss
}

// Size runs every procedure the options ask for at one frame size.
func (r *Runner) Size(ctx context.Context, size int) (*SizeResult, error) {
	r.O.Defaults()
	if err := CheckSize(size, true); err != nil {
		return nil, err
	}
	line := LinePPS(size, r.O.LineBPS)
	sr := &SizeResult{Size: size, LinePPS: line}
	if err := r.throughput(ctx, sr); err != nil {
		return sr, err
	}
	if r.O.Latency && sr.ThroughputPPS > 0 {
		var (
			all    latencyTrials
			stream []latencyTrials
		)
		rate := r.rateAsked(sr)
		for i := 0; i < r.O.LatencyTrials; i++ {
			spec := TrialSpec{Size: size, RatePPS: rate, Duration: r.O.Trial, Latency: true}
			res, err := r.run(ctx, spec)
			if err != nil {
				return sr, err
			}
			r.record(sr, "latency", spec, res, r.passes(res))
			all.add(res.Latencies, res.LatencyHist)
			if stream == nil && len(res.PerStream) > 1 {
				stream = make([]latencyTrials, len(res.PerStream))
			}
			for k, c := range res.PerStream {
				if k < len(stream) {
					stream[k].add(c.Latencies, c.LatencyHist)
				}
			}
		}
		sr.Latency = all.stats(rate)
		for _, st := range stream {
			sr.StreamLatency = append(sr.StreamLatency, st.stats(rate))
		}
	}
	for _, pct := range r.O.LossSteps {
		if pct > r.O.MaxRate {
			continue
		}
		spec := TrialSpec{Size: size, RatePPS: line * pct / 100, Duration: r.O.Trial}
		res, err := r.run(ctx, spec)
		if err != nil {
			return sr, err
		}
		r.record(sr, "frame-loss", spec, res, r.passes(res))
		sr.FrameLoss = append(sr.FrameLoss, LossPoint{RatePercent: pct, LossPercent: res.LossPercent()})
	}
	if r.O.B2BMax > 0 {
		b, err := r.backToBack(ctx, sr)
		if err != nil {
			return sr, err
		}
		sr.BackToBack = b
	}
	return sr, nil
}

// rateAsked is the rate that gave the throughput, as asked of the
// generator.
func (r *Runner) rateAsked(sr *SizeResult) float64 {
	if sr.asked > 0 {
		return sr.asked
	}
	return sr.ThroughputPPS
}

// throughput is RFC 2544 §26.1: the highest rate at which no more than
// the acceptable loss occurs. It tries the maximum rate first, then
// halves the interval between the highest rate passed and the lowest
// failed until it is narrower than the resolution. The throughput is
// the rate the generator achieved in the best passing trial. A trial the
// tester spoiled (see spoiled), even when run again, bounds the search
// as a loss would: the search goes on below it, so that the result comes
// from a trial that offered what was asked, and is marked
// generator-limited when such a trial was its upper bound. After a
// spoiled trial the search tries a little below what the generator
// offered there first (floorShare of it, up to floorTries times), so
// that a generator far slower than the line still gives the highest
// rate it verified: a floor of the device's capacity, however small a
// share of the line.
func (r *Runner) throughput(ctx context.Context, sr *SizeResult) error {
	line := sr.LinePPS
	lo, hi := 0.0, r.O.MaxRate
	lastSpoiled := false // the last trial tried was spoiled
	var reach float64    // what the generator offered in it, in % of line
	try := func(pct float64) (bool, error) {
		spec := TrialSpec{Size: sr.Size, RatePPS: line * pct / 100, Duration: r.O.Trial}
		res, rec, err := r.throughputTrial(ctx, sr, spec)
		if err != nil {
			return false, err
		}
		lastSpoiled = r.spoiled(rec, spec.RatePPS)
		if lastSpoiled {
			sr.GeneratorPPS = rec.OfferedPPS
			reach = 100 * rec.OfferedPPS / line
			return false, nil
		}
		if rec.Passed && rec.OfferedPPS >= sr.ThroughputPPS {
			sr.ThroughputPPS = rec.OfferedPPS
			sr.LossPercent = rec.LossPercent
			sr.asked = spec.RatePPS
			sr.StreamLossPercent = nil
			if len(res.PerStream) > 1 {
				for _, c := range res.PerStream {
					sr.StreamLossPercent = append(sr.StreamLossPercent, c.LossPercent())
				}
			}
		}
		return rec.Passed, nil
	}
	limited := false // hi was a rate the tester could not offer
	fail := func(pct float64) { hi, limited = pct, lastSpoiled }
	ok, err := try(hi)
	if err != nil {
		return err
	}
	if ok {
		lo = hi
	} else {
		fail(hi)
	}
	for floors := 0; ; {
		var pct float64
		switch floor := reach * floorShare; {
		case lastSpoiled && floors < floorTries && floor > lo:
			pct = floor
			floors++
		case hi-lo > r.O.Resolution:
			pct = (lo + hi) / 2
		default:
			pct = -1
		}
		if pct < 0 {
			break
		}
		ok, err := try(pct)
		if err != nil {
			return err
		}
		if ok {
			lo = pct
		} else {
			fail(pct)
		}
	}
	sr.GeneratorLimited = limited
	if !limited {
		sr.GeneratorPPS = 0
	}
	// Never report more than line rate (a generator's clock may run a
	// hair fast over a short trial).
	sr.ThroughputPPS = math.Min(sr.ThroughputPPS, line)
	sr.PercentLine = PercentOfLine(sr.ThroughputPPS, sr.Size, r.O.LineBPS)
	sr.Mbps = BitsPerSecond(sr.ThroughputPPS, sr.Size) / 1e6
	return nil
}

// backToBack is RFC 2544 §26.4: the longest burst at line rate the device
// takes without loss, by binary search on the burst length, each length
// repeated B2BRepeat times.
func (r *Runner) backToBack(ctx context.Context, sr *SizeResult) (*BackToBack, error) {
	reps := max(r.O.B2BRepeat, 1)
	burst := func(n int) (bool, error) {
		for i := 0; i < reps; i++ {
			spec := TrialSpec{Size: sr.Size, RatePPS: sr.LinePPS, Burst: n}
			res, err := r.run(ctx, spec)
			if err != nil {
				return false, err
			}
			ok := res.Sent == uint64(n)*uint64(r.O.Streams) && res.Received >= res.Sent
			r.record(sr, "b2b", spec, res, ok)
			if !ok {
				return false, nil
			}
		}
		return true, nil
	}
	lo, hi := 0, r.O.B2BMax
	ok, err := burst(hi)
	if err != nil {
		return nil, err
	}
	if ok {
		lo = hi
	}
	// Resolution: one frame, or 1 % of the longest burst tried.
	step := max(1, r.O.B2BMax/100)
	for hi-lo > step {
		mid := (lo + hi) / 2
		ok, err := burst(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return &BackToBack{Frames: lo, Seconds: float64(lo) / sr.LinePPS, Repeats: reps}, nil
}

// latencyTrials gathers the latency trials of one size (of all streams,
// or of one): every frame's latency as samples or a histogram, and each
// trial's recorded latency, the mean of what it timed (§26.2).
type latencyTrials struct {
	all    []time.Duration
	hist   *xdptraffic.Histogram
	trials []time.Duration
}

func (l *latencyTrials) add(samples []time.Duration, h *xdptraffic.Histogram) {
	l.all = append(l.all, samples...)
	switch {
	case h != nil && h.Count > 0:
		if l.hist == nil {
			l.hist = &xdptraffic.Histogram{}
		}
		l.hist.Add(*h)
		l.trials = append(l.trials, h.Mean())
	case len(samples) > 0:
		l.trials = append(l.trials, Latency(slices.Clone(samples)).Mean)
	}
}

// stats are the figures of the trials, at rate.
func (l *latencyTrials) stats(rate float64) *LatencyStats {
	st := Latency(l.all)
	if l.hist != nil {
		st = LatencyOf(*l.hist)
		st.Histogram = bucketsOf(*l.hist)
	}
	st.Trials, st.RatePPS = len(l.trials), rate
	if len(l.trials) > 0 {
		var sum time.Duration
		for _, d := range l.trials {
			sum += d
		}
		st.RFC2544 = sum / time.Duration(len(l.trials))
	}
	return &st
}
