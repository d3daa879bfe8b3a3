package bench

import (
	"context"
	"errors"
	"sync"
	"time"
)

// trialStream is one generator→analyzer stream of a trial, whatever
// carries it (lab namespaces or the appliance's own test ports); rx reads
// the independent count, the receiving interface's kernel rx_packets.
type trialStream struct {
	gen  *generator
	an   *analyzer
	spec FrameSpec
	rx   func() (uint64, error)
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
		s.an.reset(trial, spec.Latency)
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
			gens[i], errs[i] = s.gen.run(builders[i], trial, spec.RatePPS, spec.Duration, spec.Burst)
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
		res.Elapsed = max(res.Elapsed, gens[i].elapsed)
		res.Received += s.an.received.Load()
		rx, err := s.rx()
		if err != nil {
			return res, err
		}
		independent += rx - rx0[i]
		res.TesterDrops += s.an.drops() - drops0[i]
		if spec.Latency {
			res.Latencies = append(res.Latencies, s.an.latencies()...)
		}
	}
	res.Independent = int64(independent)
	return res, nil
}

// drain is how long the analyzer waits for frames in flight after the
// generator stops.
const drain = 200 * time.Millisecond
