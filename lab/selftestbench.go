package lab

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/bench/xdptraffic"
)

// The self-test's own traffic, measured by RunBench beside the lab's:
// its generator (bench/xdptraffic) from each traffic end into the drop
// the ceiling is measured at, and its RFC 2544 throughput search through
// the setup the lab measures as SetupXDPForward.
const (
	SetupSelfTestGen   = "self-test generator"
	SetupSelfTestGenAB = SetupSelfTestGen + " a->b -> XDP_DROP"
	SetupSelfTestGenBA = SetupSelfTestGen + " b->a -> XDP_DROP"
	SetupRFC2544       = "RFC 2544 ncpos xdp forward"
)

// Sink ids of the drops the self-test's generator sends into, one per
// side (the ceiling's is ceilingSink, on side a).
const selfTestGenSink = ceilingSink + 1

// selfTestGen measures the self-test's generator flat out from side of
// the first segment into an XDP_DROP on the forwarder port it feeds: the
// rate the drop counted over the run, and the rate the generator says it
// offered.
func (b *ppsBench) selfTestGen(ctx context.Context, size, side int) (pps, offered float64, err error) {
	seg := b.lab.Segments[0]
	id := selfTestGenSink + side
	lk, err := b.sinks.attach(b.lab.FW, seg.Ports[side], id)
	if err != nil {
		return 0, 0, err
	}
	defer lk.Close()
	g, err := xdptraffic.NewGenerator(xdptraffic.GeneratorOptions{Ifindex: seg.HostIndex[side], Flows: 1, Do: seg.Hosts[side].Do, CPU: 0})
	if err != nil {
		return 0, 0, err
	}
	defer g.Close()
	bld, err := bench.NewBuilder(bench.FrameSpec{Size: size, Reversed: side == 1})
	if err != nil {
		return 0, 0, err
	}
	frame := bld.Write(make([]byte, bld.Len()), 1, 0, 0)
	// A short run first: it warms the path up and tells how many
	// frames make a run of the bench's duration.
	warm, err := g.Run(ctx, xdptraffic.Send{Frame: frame, Frames: 100_000})
	if err != nil {
		return 0, 0, err
	}
	n := max(uint64(warm.OfferedPPS()*b.o.Duration.Seconds()), 100_000)
	c0, _, err := b.sinks.countID(id)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	sent, err := g.Run(ctx, xdptraffic.Send{Frame: frame, Frames: n})
	if err != nil {
		return 0, 0, err
	}
	c1, _, err := b.sinks.countID(id)
	if err != nil {
		return 0, 0, err
	}
	// The drop counts in the kernel as frames arrive; the run's own
	// first-to-last time is the span they arrived in.
	secs := sent.Elapsed().Seconds()
	if secs <= 0 {
		secs = time.Since(start).Seconds()
	}
	return float64(c1-c0) / secs, sent.OfferedPPS(), nil
}

// RFC2544Figure is the self-test's RFC 2544 throughput search through
// ncpos xdp forward, in the lab the other setups are measured in.
type RFC2544Figure struct {
	Size    int
	LineBPS float64 // nominal, high enough that the search starts above what the path can take
	MaxPPS  float64 // the highest rate tried: what the generator offered flat out
	Result  *bench.SizeResult
	Engines []string
}

// rfc2544 runs the self-test's throughput search (PortTarget, the
// appliance's code) from side a to side b of a segment through
// forwarderd's xdp engine in forward mode, one flow, as SetupXDPForward:
// the same path measured by a second, independent method, in a lab of
// its own beside the bench's: in the bench's lab, whose traffic ends
// carry its sinks, the probe found the sender's XDP frames not
// transmitted and the search fell back to AF_XDP. maxPPS is the most the
// search tries.
func (b *ppsBench) rfc2544(ctx context.Context, size int, maxPPS float64) (*RFC2544Figure, error) {
	pt, err := NewTarget(TargetOptions{Target: TargetForwarder, Flows: 1, Forwarderd: b.o.Forwarderd, RunDir: b.o.RunDir})
	if err != nil {
		return nil, err
	}
	defer pt.Close()
	fig := &RFC2544Figure{Size: size, LineBPS: 10e9, MaxPPS: maxPPS}
	line := bench.LinePPS(size, fig.LineBPS)
	o := bench.Options{LineBPS: fig.LineBPS, Trial: b.o.Duration, Resolution: 0.25, LossSteps: []float64{}, Streams: 1, Log: b.o.Out,
		MaxRate: min(100, 100*maxPPS/line)}
	if err := o.Check(); err != nil {
		return nil, err
	}
	r := &bench.Runner{T: pt, O: o}
	fmt.Fprintf(b.o.Out, "  RFC 2544 throughput search, %d bytes, through %s (trials: analyzer count beside the receiver's rx_packets)\n", size, SetupXDPForward)
	fig.Result, err = r.Size(ctx, size)
	fig.Engines = pt.Engines()
	return fig, err
}

// printSelfTest writes the self-test's figures: its generator's rate per
// size and direction as a share of the ceiling and of 1 GbE line rate,
// and its RFC 2544 throughput against the capacity measured for the same
// setup.
func (r *BenchReport) printSelfTest(w io.Writer) {
	if r.find(SetupSelfTestGenAB, r.firstSize()) == 0 && r.RFC2544 == nil {
		return
	}
	fmt.Fprintln(w, "self-test traffic (bench/xdptraffic: BPF_PROG_RUN live frames, one core, flat out into the drop the ceiling is measured at):")
	for _, size := range r.sizes() {
		ceil := r.find(SetupCeiling, size)
		line := bench.LinePPS(size, 1e9)
		for _, setup := range []string{SetupSelfTestGenAB, SetupSelfTestGenBA} {
			pps := r.find(setup, size)
			if pps == 0 {
				continue
			}
			fmt.Fprintf(w, "  %5d bytes  %-38s %6.2f Mpps  %5s ceiling  %5s 1 GbE line rate (%.2f Mpps)\n",
				size, setup, pps/1e6, ratio(pps, ceil), ratio(pps, line), line/1e6)
		}
	}
	if f := r.RFC2544; f != nil && f.Result != nil {
		capacity := r.find(SetupXDPForward, f.Size)
		got := f.Result.ThroughputPPS
		agree := "not measured"
		if capacity > 0 && got > 0 {
			if d := 100 * (got/capacity - 1); d >= -5 && d <= 5 {
				agree = fmt.Sprintf("agree within 5 %% (%+.1f %%)", d)
			} else {
				agree = fmt.Sprintf("do NOT agree within 5 %% (%+.1f %%)", d)
			}
		}
		limited := ""
		if f.Result.GeneratorLimited {
			limited = ", generator-limited"
		}
		fmt.Fprintf(w, "  %5d bytes  RFC 2544 throughput through %s: %.2f Mpps (no loss, searched up to %.2f Mpps at 0.25 %% of a nominal %s%s)\n",
			f.Size, SetupXDPForward, got/1e6, f.MaxPPS/1e6, bench.FormatBPS(f.LineBPS), limited)
		fmt.Fprintf(w, "  %5d bytes  the bench's capacity of the same setup: %.2f Mpps: the two methods %s\n", f.Size, capacity/1e6, agree)
		fmt.Fprintf(w, "  traffic: %v\n", f.Engines)
	}
	fmt.Fprintln(w)
}

// sizes lists the sizes of the rows, in order.
func (r *BenchReport) sizes() []int {
	var sizes []int
	for _, row := range r.Rows {
		if len(sizes) == 0 || sizes[len(sizes)-1] != row.Size {
			sizes = append(sizes, row.Size)
		}
	}
	return sizes
}

func (r *BenchReport) firstSize() int {
	if s := r.sizes(); len(s) > 0 {
		return s[0]
	}
	return 0
}
