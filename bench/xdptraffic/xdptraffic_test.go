package xdptraffic

import (
	"testing"
	"time"
)

// TestBuckets: every latency falls in the bucket whose range holds it,
// and the ranges follow each other without gaps.
func TestBuckets(t *testing.T) {
	for _, ns := range []uint64{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 100, 999, 1000, 1023, 1024, 123456, 1e9, 1e12, 1 << 62} {
		b := bucket(ns)
		lo, hi := BucketRange(b)
		if ns < lo || ns > hi {
			t.Errorf("%d ns in bucket %d of [%d, %d]", ns, b, lo, hi)
		}
	}
	_, prev := BucketRange(3)
	for b := 8; b < histBuckets; b++ {
		lo, hi := BucketRange(b)
		if lo != prev+1 || hi < lo {
			t.Fatalf("bucket %d is [%d, %d] after one ending at %d", b, lo, hi, prev)
		}
		prev = hi
	}
}

func TestQuantile(t *testing.T) {
	var h Histogram
	add := func(ns uint64, n uint64) {
		h.Buckets[bucket(ns)] += n
		h.Count += n
		h.Sum += time.Duration(ns * n)
		h.Max = max(h.Max, time.Duration(ns))
	}
	add(1000, 990) // 990 frames at 1 µs, 10 at 1 ms
	add(1_000_000, 10)
	if p := h.Quantile(0.99); p < 1000 || p > 1100 {
		t.Errorf("p99 = %v, want about 1 µs", p)
	}
	if p := h.Quantile(0.999); p != time.Millisecond {
		t.Errorf("p99.9 = %v, want 1 ms (capped at the maximum)", p)
	}
	if m := h.Mean(); m != 10990*time.Nanosecond {
		t.Errorf("mean = %v", m)
	}
}
