package lab

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ncpos/ncpos/bench"
)

// SetupRFC2544 is the self-test's RFC 2544 throughput search, measured by
// RunBench through the setup it measures as SetupXDPForward. The lab's
// traffic is the self-test's (bench/xdptraffic), so the ceiling is also
// what the self-test's generator offers on this host.
const SetupRFC2544 = "RFC 2544 ncpos xdp forward"

// RFC2544Figure is the self-test's RFC 2544 throughput search through
// ncpos xdp forward, in the lab the other setups are measured in.
type RFC2544Figure struct {
	Size    int
	LineBPS float64 // nominal, high enough that the search starts above what the path can take
	MaxPPS  float64 // the highest rate tried: what the generator offered flat out
	// Searches are each search's throughput, in the order run; Result
	// is the best search's.
	Searches []float64
	Result   *bench.SizeResult
	Engines  []string
}

// rfc2544 runs the self-test's throughput search (PortTarget, the
// appliance's code) from side a to side b of a segment through
// forwarderd's xdp engine in forward mode, one flow, as SetupXDPForward:
// the same path measured by a second, independent method, in a lab of
// its own beside the bench's: in the bench's lab, whose traffic ends
// carry its sinks, the probe found the sender's XDP frames not
// transmitted and the search fell back to AF_XDP. maxPPS is the most the
// search tries.
//
// The search runs as many times as the bench has rounds, after them, and
// the best is kept, as the bench's rates are the best of their rounds: on
// a host that runs anything else the generator shares its core with it,
// and a search whose trials it spoiled at some rate goes on below that
// rate.
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
	rounds := max(b.o.Rounds, 1)
	for round := 1; round <= rounds; round++ {
		fmt.Fprintf(b.o.Out, "  RFC 2544 throughput search %d of %d, %d bytes, through %s (trials: analyzer count beside the receiver's rx_packets)\n",
			round, rounds, size, SetupXDPForward)
		res, err := r.Size(ctx, size)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(b.o.Out, "  RFC 2544 throughput search %d of %d: %.2f Mpps\n", round, rounds, res.ThroughputPPS/1e6)
		fig.Searches = append(fig.Searches, res.ThroughputPPS)
		if fig.Result == nil || res.ThroughputPPS > fig.Result.ThroughputPPS {
			fig.Result = res
		}
	}
	fig.Engines = pt.Engines()
	return fig, nil
}

// printSelfTest writes the self-test's figures: its generator's rate per
// size (the ceiling's) as a share of 1 GbE line rate, and its RFC 2544
// throughput against the capacity measured for the same setup.
func (r *BenchReport) printSelfTest(w io.Writer) {
	if r.find(SetupCeiling, r.firstSize()) == 0 && r.RFC2544 == nil {
		return
	}
	fmt.Fprintln(w, "self-test traffic (bench/xdptraffic, the lab's too: BPF_PROG_RUN live frames, one core, flat out into the ceiling's drop):")
	for _, size := range r.sizes() {
		pps := r.find(SetupCeiling, size)
		if pps == 0 {
			continue
		}
		line := bench.LinePPS(size, 1e9)
		fmt.Fprintf(w, "  %5d bytes  generator %6.2f Mpps  %5s 1 GbE line rate (%.2f Mpps)\n", size, pps/1e6, ratio(pps, line), line/1e6)
	}
	if f := r.RFC2544; f != nil && f.Result != nil {
		capacity := r.find(SetupXDPForward, f.Size)
		got := f.Result.ThroughputPPS
		agree := "not measured"
		switch d := 100 * (got/capacity - 1); {
		case capacity <= 0 || got <= 0:
		case f.MaxPPS < 0.95*capacity && got >= 0.99*f.MaxPPS:
			// The search found the path at least as fast as it could
			// ask: without the ceiling's row, 1 GbE's line rate.
			bound := "the generator's flat-out rate"
			if r.find(SetupCeiling, f.Size) == 0 {
				bound = "1 GbE's line rate without the ceiling's row"
			}
			agree = fmt.Sprintf("not compared: the search went no higher than %.2f Mpps, its bound (%s)", f.MaxPPS/1e6, bound)
		case d >= -5 && d <= 5:
			agree = fmt.Sprintf("agree within 5 %% (%+.1f %%)", d)
		default:
			agree = fmt.Sprintf("do NOT agree within 5 %% (%+.1f %%)", d)
		}
		limited := ""
		if f.Result.GeneratorLimited {
			limited = ", generator-limited"
		}
		searches := make([]string, len(f.Searches))
		for i, pps := range f.Searches {
			searches[i] = fmt.Sprintf("%.2f", pps/1e6)
		}
		best := "one search"
		if len(f.Searches) > 1 {
			best = fmt.Sprintf("best of %d searches (%s Mpps)", len(f.Searches), strings.Join(searches, ", "))
		}
		fmt.Fprintf(w, "  %5d bytes  RFC 2544 throughput through %s: %.2f Mpps, %s; no loss, searched up to %.2f Mpps at 0.25 %% of a nominal %s%s\n",
			f.Size, SetupXDPForward, got/1e6, best, f.MaxPPS/1e6, bench.FormatBPS(f.LineBPS), limited)
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
