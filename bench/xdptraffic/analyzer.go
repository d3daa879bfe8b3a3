package xdptraffic

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// maxStreams is how many streams one analyzer tells apart (the stamp's
// stream field, from 0).
const maxStreams = 64

// histBuckets is the latency histogram's size: four buckets per power of
// two of nanoseconds.
const histBuckets = 256

// Analyzer counts the test frames arriving at a port, per stream, and
// drops them; other frames pass to the stack.
type Analyzer struct {
	counts, seqs, config *ebpf.Map
	prog                 *ebpf.Program
	link                 link.Link
	cpus                 int
	// Mode is how the program runs: "native" in the driver, or
	// "generic" (after the stack took the frame, slower) for a driver
	// without XDP.
	Mode string
}

// NewAnalyzer attaches the analyzer to the port ifindex, in the network
// namespace do runs in (nil: this one). A driver that runs no XDP
// program natively gets it in generic mode.
func NewAnalyzer(ifindex int, do func(func() error) error) (*Analyzer, error) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("analyzer: %w", err)
	}
	spec, err := LoadTraffic()
	if err != nil {
		return nil, fmt.Errorf("analyzer: %w", err)
	}
	var objs struct {
		Analyze *ebpf.Program `ebpf:"analyze"`
		Counts  *ebpf.Map     `ebpf:"counts"`
		Seqs    *ebpf.Map     `ebpf:"seqs"`
		Config  *ebpf.Map     `ebpf:"analyzer"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("analyzer: loading: %w", err)
	}
	a := &Analyzer{counts: objs.Counts, seqs: objs.Seqs, config: objs.Config, prog: objs.Analyze, cpus: cpus}
	if do == nil {
		do = func(fn func() error) error { return fn() }
	}
	err = do(func() error {
		l, err := link.AttachXDP(link.XDPOptions{Program: a.prog, Interface: ifindex, Flags: link.XDPDriverMode})
		a.Mode = "native"
		if err != nil {
			l, err = link.AttachXDP(link.XDPOptions{Program: a.prog, Interface: ifindex, Flags: link.XDPGenericMode})
			a.Mode = "generic"
		}
		a.link = l
		return err
	})
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("analyzer on ifindex %d: %w", ifindex, err)
	}
	return a, nil
}

// Close detaches and unloads the analyzer.
func (a *Analyzer) Close() error {
	var errs []error
	if a.link != nil {
		errs = append(errs, a.link.Close())
	}
	return errors.Join(append(errs, a.prog.Close(), a.counts.Close(), a.seqs.Close(), a.config.Close())...)
}

// Reset starts counting trial: earlier counts are cleared, and frames of
// any other trial are counted apart (Other).
func (a *Analyzer) Reset(trial uint16) error {
	if err := a.config.Put(uint32(0), &TrafficAnConfig{Trial: uint32(trial)}); err != nil {
		return fmt.Errorf("analyzer: %w", err)
	}
	zero := make([]TrafficAnCounts, a.cpus)
	for s := range uint32(maxStreams) {
		if err := a.counts.Put(s, zero); err != nil {
			return fmt.Errorf("analyzer: %w", err)
		}
		if err := a.seqs.Put(s, &TrafficAnSeq{}); err != nil {
			return fmt.Errorf("analyzer: %w", err)
		}
	}
	return nil
}

// Stream is what the analyzer counted of one stream since Reset.
type Stream struct {
	Frames, Bytes uint64
	// Lost are the sequence numbers up to the highest seen that never
	// arrived; Reordered arrived after a later one, Duplicated again.
	Lost, Reordered, Duplicated uint64
	Latency                     Histogram
}

// Histogram is the latencies of a stream's frames that carried a time
// (those of a latency trial).
type Histogram struct {
	Count    uint64
	Sum      time.Duration
	Min, Max time.Duration
	Buckets  [histBuckets]uint64
}

// Add merges o into h.
func (h *Histogram) Add(o Histogram) {
	if o.Count == 0 {
		return
	}
	if h.Count == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	h.Max = max(h.Max, o.Max)
	h.Count += o.Count
	h.Sum += o.Sum
	for b, n := range o.Buckets {
		h.Buckets[b] += n
	}
}

// Mean is the mean latency.
func (h Histogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// Quantile is the latency below which a share q of the frames arrived, to
// the histogram's resolution (the upper bound of its bucket, at most Max).
func (h Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.Count)))
	var n uint64
	for b, c := range h.Buckets {
		n += c
		if n >= max(rank, 1) {
			_, hi := BucketRange(b)
			return min(time.Duration(hi), h.Max)
		}
	}
	return h.Max
}

// BucketRange is the latencies in ns that bucket b holds, lo ≤ ns ≤ hi
// (the same arithmetic as the program's).
func BucketRange(b int) (lo, hi uint64) {
	if b < 4 {
		return uint64(b), uint64(b)
	}
	msb, sub := uint(b/4), uint64(b%4)
	if msb < 2 {
		return 0, 0 // not used: latencies of 4 ns and more start at bucket 8
	}
	lo = (4 + sub) << (msb - 2)
	return lo, (5+sub)<<(msb-2) - 1
}

// bucket is the program's bucket function, for tests.
func bucket(ns uint64) int {
	if ns < 4 {
		return int(ns)
	}
	msb := 63
	for ns>>msb == 0 {
		msb--
	}
	return min(msb*4+int(ns>>(msb-2)&3), histBuckets-1)
}

// Streams reads every stream that got frames, and the frames of other
// trials and the frames that were no test frames.
func (a *Analyzer) Streams() (map[uint16]Stream, uint64, uint64, error) {
	var cfg TrafficAnConfig
	if err := a.config.Lookup(uint32(0), &cfg); err != nil {
		return nil, 0, 0, fmt.Errorf("analyzer: %w", err)
	}
	out := map[uint16]Stream{}
	for s := range uint32(maxStreams) {
		var per []TrafficAnCounts
		if err := a.counts.Lookup(s, &per); err != nil {
			return nil, 0, 0, fmt.Errorf("analyzer: %w", err)
		}
		var st Stream
		h := &st.Latency
		for _, c := range per {
			st.Frames += c.Frames
			st.Bytes += c.Bytes
			h.Count += c.Timed
			h.Sum += time.Duration(c.LatSum)
			if c.Timed > 0 && (h.Min == 0 || time.Duration(c.LatMin) < h.Min) {
				h.Min = time.Duration(c.LatMin)
			}
			h.Max = max(h.Max, time.Duration(c.LatMax))
			for b, n := range c.Hist {
				h.Buckets[b] += n
			}
		}
		if st.Frames == 0 {
			continue
		}
		var q TrafficAnSeq
		if err := a.seqs.Lookup(s, &q); err != nil {
			return nil, 0, 0, fmt.Errorf("analyzer: %w", err)
		}
		st.Reordered, st.Duplicated = q.Reordered, q.Duplicated
		if unique := st.Frames - q.Duplicated; q.High > unique {
			st.Lost = q.High - unique
		}
		out[uint16(s)] = st
	}
	return out, cfg.Other, cfg.Passed, nil
}
