package bench

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/ncpos/ncpos/bench/xdptraffic"
)

// Trial sends one trial's frames through the device under test and counts
// what comes back. The simulated device of the unit tests and the AF_XDP
// traffic of the lab both implement it.
type Trial interface {
	Run(ctx context.Context, spec TrialSpec) (TrialResult, error)
}

// TrialSpec is one trial: frames of Size bytes at RatePPS (per stream,
// the streams being every direction of every segment) for Duration; or,
// when Burst > 0, one burst of Burst frames at line rate per stream.
type TrialSpec struct {
	Size     int
	RatePPS  float64
	Duration time.Duration
	Burst    int
	Latency  bool // keep per-frame latencies
}

// TrialResult is what a trial counted, over all streams.
type TrialResult struct {
	Sent     uint64 // frames the generator handed to the port
	Received uint64 // distinct frames of this trial's streams the analyzers got back
	// Duplicates are frames of the trial that arrived again, Foreign
	// frames of other streams or trials and no test frames: reported,
	// never counted as received, so that neither can hide a loss.
	Duplicates, Foreign uint64
	Elapsed             time.Duration // from the first frame sent to the last
	// Independent is a second count of the frames that arrived, by
	// other means than the analyzer (the receiving interface's kernel
	// counters, an XDP counter); negative when there is none.
	Independent     int64
	IndependentName string
	Latencies       []time.Duration // when asked, a sample of them
	// LatencyHist is, when asked of analyzers that keep one, the
	// histogram of every frame's latency.
	LatencyHist *xdptraffic.Histogram
	// TesterDrops are frames the analyzer itself could not take (its
	// socket's ring full): counted as lost, and reported, since a
	// tester that drops makes the figure a floor.
	TesterDrops uint64
	// TxDropped are frames the generator made that its port did not
	// transmit (not in Sent).
	TxDropped uint64
	// Behind is the furthest behind its schedule a paced generator fell
	// (the longest of any stream's); 0 where the generator does not say.
	Behind time.Duration
	// PerStream is each stream's share of Sent and Received, in the
	// order of the target's streams, where the target counts them apart.
	PerStream []StreamCount
}

// StreamCount is what one stream of a trial sent and what of it arrived,
// and, when asked, its latencies as its analyzer keeps them (samples or
// a histogram of every frame).
type StreamCount struct {
	Sent, Received uint64
	Latencies      []time.Duration       `json:"-"`
	LatencyHist    *xdptraffic.Histogram `json:"-"`
}

// LossPercent is the share of the stream's frames that did not arrive.
func (c StreamCount) LossPercent() float64 {
	if c.Sent == 0 || c.Received >= c.Sent {
		return 0
	}
	return 100 * float64(c.Sent-c.Received) / float64(c.Sent)
}

// OfferedPPS is the rate the generator achieved, per stream.
func (r TrialResult) OfferedPPS(streams int) float64 {
	if r.Elapsed <= 0 || streams <= 0 {
		return 0
	}
	return float64(r.Sent) / r.Elapsed.Seconds() / float64(streams)
}

// LossPercent is the share of sent frames that did not arrive.
func (r TrialResult) LossPercent() float64 {
	if r.Sent == 0 {
		return 0
	}
	if r.Received >= r.Sent {
		return 0
	}
	return 100 * float64(r.Sent-r.Received) / float64(r.Sent)
}

// Agreement is how far the independent count is from the analyzer's, in
// percent of the analyzer's (0 when both are 0), or NaN without one.
func (r TrialResult) Agreement() float64 {
	if r.Independent < 0 {
		return math.NaN()
	}
	if r.Received == 0 {
		if r.Independent == 0 {
			return 0
		}
		return 100
	}
	return 100 * math.Abs(float64(r.Independent)-float64(r.Received)) / float64(r.Received)
}

// LatencyStats summarise latencies.
type LatencyStats struct {
	Samples int           `json:"samples"`
	Min     time.Duration `json:"min_ns"`
	Mean    time.Duration `json:"mean_ns"`
	Max     time.Duration `json:"max_ns"`
	P99     time.Duration `json:"p99_ns"`
	// RFC2544 is the latency as RFC 2544 §26.2 reports it: the average
	// of the latencies recorded in Trials trials at RatePPS, the
	// throughput rate. Each trial's recorded latency is the mean of every
	// frame it timed, where the RFC times one tagged frame, and a frame is
	// timed from the generator's stamp as it is handed to the port to the
	// analyzer taking it in, both on the same host clock.
	RFC2544 time.Duration `json:"rfc2544_ns"`
	Trials  int           `json:"trials"`
	RatePPS float64       `json:"rate_pps"`
	// Histogram is how the frames' latencies spread, where the analyzer
	// keeps one: its buckets that hold frames, in order.
	Histogram []LatencyBucket `json:"histogram,omitempty"`
}

// LatencyBucket is one bucket of a latency histogram: Frames frames took
// between From and To ns inclusive.
type LatencyBucket struct {
	From   uint64 `json:"from_ns"`
	To     uint64 `json:"to_ns"`
	Frames uint64 `json:"frames"`
}

// bucketsOf lists h's buckets that hold frames.
func bucketsOf(h xdptraffic.Histogram) []LatencyBucket {
	var out []LatencyBucket
	for b, n := range h.Buckets {
		if n > 0 {
			lo, hi := xdptraffic.BucketRange(b)
			out = append(out, LatencyBucket{From: lo, To: hi, Frames: n})
		}
	}
	return out
}

// LatencyOf summarises a histogram of latencies (the kernel analyzer's,
// of every frame): the p99 to the histogram's resolution.
func LatencyOf(h xdptraffic.Histogram) LatencyStats {
	return LatencyStats{Samples: int(h.Count), Min: h.Min, Mean: h.Mean(), Max: h.Max, P99: h.Quantile(0.99)}
}

// Latency computes min, mean, max and the 99th percentile (nearest rank)
// of ds; the zero value when ds is empty. ds is sorted in place.
func Latency(ds []time.Duration) LatencyStats {
	if len(ds) == 0 {
		return LatencyStats{}
	}
	slices.Sort(ds)
	var sum float64
	for _, d := range ds {
		sum += float64(d)
	}
	rank := int(math.Ceil(0.99*float64(len(ds)))) - 1
	return LatencyStats{
		Samples: len(ds),
		Min:     ds[0],
		Max:     ds[len(ds)-1],
		Mean:    time.Duration(sum / float64(len(ds))),
		P99:     ds[max(rank, 0)],
	}
}
