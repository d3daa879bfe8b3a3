package bench

import (
	"context"
	"math"
	"time"
)

// TargetSim names the simulated device as a bench target.
const TargetSim = "sim"

// SimDevice is a simulated device under test with a known behaviour, for
// the unit tests and `ncpos bench -target sim`: it forwards up to
// CapacityPPS frames per second per stream and drops the excess, loses
// LossPercent of what it forwards on top (a lossy link), absorbs bursts at
// line rate up to BufferFrames, and delays every frame by Latency plus
// what its buffer holds ahead of it. Nothing is sent anywhere.
type SimDevice struct {
	LineBPS      float64
	CapacityPPS  float64 // per stream, at every size; or
	CapacityBPS  float64 // per stream, frame bits (as Mb/s counts them), if set
	LossPercent  float64
	BufferFrames int
	Latency      time.Duration
	Streams      int
	// GeneratorPPS caps what the simulated generator offers, to test
	// the generator-limited mark; no cap when 0.
	GeneratorPPS float64
	// GeneratorSlips are how far short of the rate asked (in %) the
	// simulated generator offers in the first trials, one per trial, as
	// a generator whose core was busy elsewhere for a moment does.
	GeneratorSlips []float64
	Trials         int // trials run so far
}

// Capacity is the device's capacity at size, per stream.
func (d *SimDevice) Capacity(size int) float64 {
	c := d.CapacityPPS
	if d.CapacityBPS > 0 {
		c = d.CapacityBPS / (float64(size) * 8)
	}
	return c
}

// Run simulates one trial.
func (d *SimDevice) Run(ctx context.Context, spec TrialSpec) (TrialResult, error) {
	d.Trials++
	streams := max(d.Streams, 1)
	capacity := d.Capacity(spec.Size)
	res := TrialResult{Independent: -1}
	var perStream, delivered float64
	if spec.Burst > 0 {
		perStream = float64(spec.Burst)
		secs := perStream / LinePPS(spec.Size, d.LineBPS)
		res.Elapsed = time.Duration(secs * float64(time.Second))
		// While the burst arrives the device drains at its capacity; the
		// buffer holds the rest.
		delivered = math.Min(perStream, capacity*secs+float64(d.BufferFrames))
	} else {
		rate := spec.RatePPS
		if d.GeneratorPPS > 0 {
			rate = math.Min(rate, d.GeneratorPPS)
		}
		if d.Trials <= len(d.GeneratorSlips) {
			rate *= 1 - d.GeneratorSlips[d.Trials-1]/100
		}
		secs := spec.Duration.Seconds()
		perStream = math.Floor(rate * secs)
		res.Elapsed = spec.Duration
		delivered = math.Min(perStream, math.Floor(capacity*secs))
	}
	delivered = math.Floor(delivered * (1 - d.LossPercent/100))
	res.Sent = uint64(perStream) * uint64(streams)
	res.Received = uint64(delivered) * uint64(streams)
	if spec.Latency && res.Received > 0 {
		n := min(int(res.Received), 1000)
		for i := 0; i < n; i++ {
			res.Latencies = append(res.Latencies, d.Latency+time.Duration(i)*time.Microsecond/100)
		}
	}
	return res, ctx.Err()
}
