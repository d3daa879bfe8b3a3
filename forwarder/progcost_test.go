package forwarder_test

import (
	"testing"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/internal/frames"
	labbpf "github.com/ncpos/ncpos/lab/bpf"
)

// BenchmarkPortPrograms reports what each port program costs per frame in
// the kernel (BPF_PROG_RUN, the redirect not carried out), for a 64-byte
// UDP frame, beside the bench's devmap reference (a bare redirect): the
// difference is what counting and checking cost.
func BenchmarkPortPrograms(b *testing.B) {
	requireRoot(b)
	frame := frames.UDPFrame(60, 1, 2)
	b.Run("devmap-reference", func(b *testing.B) {
		var objs labbpf.LabObjects
		if err := labbpf.LoadLabObjects(&objs, nil); err != nil {
			b.Fatal(err)
		}
		defer objs.Close()
		b.ResetTimer()
		_, d, err := objs.Reference.Benchmark(frame, b.N, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(d.Nanoseconds()), "kernel-ns/frame")
	})
	for _, c := range []struct {
		name      string
		prog      string
		noCapture bool
		mtu       int // jumbo: the frame's length is asked of the kernel
	}{
		{"forward", bpf.DatapathProgPortForward, false, config.DefaultMTU},
		{"forward-jumbo", bpf.DatapathProgPortForward, false, 9000},
		{"forward-no-hook", bpf.DatapathProgPortForward, true, config.DefaultMTU},
		{"service", bpf.DatapathProgPortService, false, config.DefaultMTU},
	} {
		b.Run(c.name, func(b *testing.B) {
			pt, err := forwarder.NewProgramTesterOf(c.prog, c.noCapture, c.mtu)
			if err != nil {
				b.Fatal(err)
			}
			defer pt.Close()
			b.ResetTimer()
			d, err := pt.Cost(frame, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(d.Nanoseconds()), "kernel-ns/frame")
		})
	}
}
