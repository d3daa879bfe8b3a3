package lab_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/lab"
)

// TestBenchNeedsLiveFrames: on a kernel that does not run live frames the
// lab's comparisons refuse to run, and say why, rather than measure the
// AF_XDP socket in every row. Where the kernel runs them, the comparisons
// run for minutes: that is ncpos bench -compare.
func TestBenchNeedsLiveFrames(t *testing.T) {
	requireLab(t)
	if xdptraffic.LiveFrames() == nil {
		t.Skip("this kernel runs live frames: the comparisons would run (ncpos bench -compare)")
	}
	if _, err := lab.RunBench(context.Background(), lab.BenchOptions{}); !errors.Is(err, xdptraffic.ErrNoLiveFrames) {
		t.Fatalf("RunBench without live frames: %v, want an error of ErrNoLiveFrames", err)
	}
}
