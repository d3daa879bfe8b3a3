package lab_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ncpos/ncpos/lab"
)

// TestBench runs the bench of `ncpos lab bench` when NCPOS_LAB_BENCH=1 and
// prints its figures; it asserts nothing about them (figures are for
// people, not pass/fail). NCPOS_LAB_BENCH_SIZES=64 limits the sizes.
func TestBench(t *testing.T) {
	if os.Getenv("NCPOS_LAB_BENCH") != "1" {
		t.Skip("set NCPOS_LAB_BENCH=1 to run the bench (about two minutes)")
	}
	requireLab(t)
	opts := lab.BenchOptions{Forwarderd: forwarderdBin, RunDir: t.TempDir(), Duration: 2 * time.Second, Out: os.Stdout}
	if os.Getenv("NCPOS_LAB_BENCH_SIZES") == "64" {
		opts.Sizes, opts.Rounds = []int{64}, 1
	}
	rep, err := lab.RunBench(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	rep.Print(os.Stdout)
}
