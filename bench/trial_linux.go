package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ncpos/ncpos/bench/xdptraffic"
)

// trialStream is one generator→analyzer stream of a trial, whatever
// carries it (lab namespaces or the appliance's own test ports); rx reads
// the independent count, the receiving interface's kernel rx_packets.
type trialStream struct {
	gen  streamGenerator
	an   streamAnalyzer
	spec FrameSpec
	rx   func() (uint64, error)
}

// genResult is what one run of a generator did.
type genResult struct {
	sent      uint64 // frames the port transmitted
	elapsed   time.Duration
	txDropped uint64        // made but not transmitted
	behind    time.Duration // the furthest behind its schedule it fell; 0: not known
}

// streamGenerator sends a stream's frames: the kernel's live frames or an
// AF_XDP socket.
type streamGenerator interface {
	// run sends frames of b at spec.RatePPS for spec.Duration (or, with
	// spec.Burst > 0, that many frames as fast as it can), with the time
	// in each where spec.Latency asks for it, and returns when they are
	// out.
	run(b *Builder, trial uint16, spec TrialSpec) (genResult, error)
	close() error
}

// streamAnalyzer counts a stream's frames where they arrive.
type streamAnalyzer interface {
	reset(trial uint16, latency bool) error
	// received is what arrived of the stream in the trial: only its
	// distinct frames count as received.
	received() (arrivals, error)
	drops() uint64 // frames the tester itself could not take
	// latency is what the analyzer keeps of the latencies: samples, or
	// a histogram of all of them.
	latency() ([]time.Duration, *xdptraffic.Histogram)
	close() error
}

// runTrial runs one trial on every stream at once and compares what the
// analyzers counted with the kernel's independent count.
func runTrial(ctx context.Context, trial uint16, spec TrialSpec, streams []trialStream, independentName string) (TrialResult, error) {
	res := TrialResult{IndependentName: independentName}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	rx0 := make([]uint64, len(streams))
	drops0 := make([]uint64, len(streams))
	builders := make([]*Builder, len(streams))
	for i, s := range streams {
		fs := s.spec
		fs.Size = spec.Size
		b, err := NewBuilder(fs)
		if err != nil {
			return res, err
		}
		builders[i] = b
		if err := s.an.reset(trial, spec.Latency); err != nil {
			return res, err
		}
		drops0[i] = s.an.drops()
		if rx0[i], err = s.rx(); err != nil {
			return res, err
		}
	}
	var (
		wg   sync.WaitGroup
		gens = make([]genResult, len(streams))
		errs = make([]error, len(streams))
	)
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gens[i], errs[i] = s.gen.run(builders[i], trial, spec)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	time.Sleep(drain)
	var independent uint64
	for i, s := range streams {
		res.Sent += gens[i].sent
		res.TxDropped += gens[i].txDropped
		res.Behind = max(res.Behind, gens[i].behind)
		res.Elapsed = max(res.Elapsed, gens[i].elapsed)
		got, err := s.an.received()
		if err != nil {
			return res, err
		}
		res.Received += got.Distinct
		res.Duplicates += got.Duplicates
		res.Foreign += got.Foreign
		count := StreamCount{Sent: gens[i].sent, Received: got.Distinct}
		rx, err := s.rx()
		if err != nil {
			return res, err
		}
		independent += rx - rx0[i]
		res.TesterDrops += s.an.drops() - drops0[i]
		if spec.Latency {
			lats, h := s.an.latency()
			res.Latencies = append(res.Latencies, lats...)
			count.Latencies, count.LatencyHist = lats, h
			if h != nil {
				if res.LatencyHist == nil {
					res.LatencyHist = &xdptraffic.Histogram{}
				}
				res.LatencyHist.Add(*h)
			}
		}
		res.PerStream = append(res.PerStream, count)
	}
	res.Independent = int64(independent)
	return res, nil
}

// drain is how long the analyzer waits for frames in flight after the
// generator stops.
const drain = 200 * time.Millisecond
