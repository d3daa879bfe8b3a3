package lab

import (
	"fmt"
	"io"
)

// find returns the rate of setup at size, or 0.
func (r *BenchReport) find(setup string, size int) float64 {
	for _, row := range r.Rows {
		if row.Setup == setup && row.Size == size {
			return row.PPS
		}
	}
	return 0
}

// Print writes the report: per size, each setup's rate, cost per frame,
// cost added over the ceiling, and ratios to the Linux bridge and to the
// devmap reference; then the overload figure and the targets the datapath
// is held to on a 2-core lab.
func (r *BenchReport) Print(w io.Writer) {
	fmt.Fprintf(w, "ncpos bench -compare: veth lab, %d CPUs, generator on CPU %d, best 0.5 s window of %v, best of %d rounds\n", r.CPUs, r.GenCPU, r.Duration, r.Rounds)
	fmt.Fprintf(w, "(on veth the generator, the datapath and the sink share one core's softirq: ns/frame is the honest figure)\n\n")
	fmt.Fprintf(w, "%5s  %-36s %8s %9s %10s %9s %9s  %s\n", "bytes", "setup", "Mpps", "ns/frame", "+ns/frame", "x bridge", "x ref", "sink")
	sizes := r.sizes()
	for _, size := range sizes {
		ceil := r.find(SetupCeiling, size)
		bridge := r.find(SetupBridge, size)
		ref := r.find(SetupReference, size)
		for _, row := range r.Rows {
			if row.Size != size {
				continue
			}
			fmt.Fprintf(w, "%5d  %-36s %8.2f %9s %10s %9s %9s  %s\n", size, row.Setup, row.PPS/1e6,
				nsPer(row.PPS), added(row.PPS, ceil), ratio(row.PPS, bridge), ratio(row.PPS, ref), row.Sink)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "(sink: where the far end counted; the Linux bridge and afxdp transmit socket buffers and are measured at both, the better kept: see SinkTC)\n\n")
	r.printSelfTest(w)
	if len(r.Overload) > 0 {
		fmt.Fprintf(w, "overload, %d bytes, each datapath with the forwarding core to itself (xdp: its NAPI in a thread there), generator on CPU %d, best of %d rounds per point:\n", r.Overload[0].Size, r.GenCPU, r.Rounds)
		for _, s := range r.Overload {
			s.print(w)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "targets (2-core lab):")
	for _, size := range sizes {
		fwd := r.find(SetupXDPForward, size)
		target := func(what string, got, base, want float64) {
			verdict := "met"
			if base == 0 || got == 0 {
				verdict = "not measured"
			} else if got/base < want {
				verdict = "NOT met"
			}
			shown := ratio(got, base)
			if got == 0 {
				shown = "-"
			}
			fmt.Fprintf(w, "  %5d bytes  %-42s %5s (want >= %.2fx) %s\n", size, what, shown, want, verdict)
		}
		target("xdp forward / devmap reference", fwd, r.find(SetupReference, size), 1)
		target("xdp forward / Linux bridge", fwd, r.find(SetupBridge, size), 4)
		target("xdp service 1 flow / xdp forward", r.find(SetupXDPSvc1, size), fwd, 0.9)
		target("xdp service 10000 flows / xdp forward", r.find(SetupXDPSvc10k, size), fwd, 0.9)
		target("afxdp forward / xdp forward", r.find(SetupAFXDP, size), fwd, 0.3)
	}
	fmt.Fprintln(w, "capture (the cost of its hook while none runs, and of one that takes every frame; figures, not targets):")
	for _, size := range sizes {
		fwd, none := r.find(SetupXDPForward, size), r.find(SetupNoHook, size)
		if fwd > 0 && none > 0 {
			fmt.Fprintf(w, "  %5d bytes  %-42s %5s (%+.1f ns/frame)\n", size, "hook idle / no hook", ratio(fwd, none), 1e9/fwd-1e9/none)
		}
		if c := r.find(SetupCapturing, size); c > 0 && fwd > 0 {
			fmt.Fprintf(w, "  %5d bytes  %-42s %5s (%+.1f ns/frame)\n", size, "capturing all / hook idle", ratio(c, fwd), 1e9/c-1e9/fwd)
		}
	}
	r.printOverloadTargets(w)
}

// printOverloadTargets judges each datapath's share of its maximum kept at
// 150 % offered against the devmap reference's share in the same run: the
// reference is what the kernel's redirect keeps on this host, so a share
// at least as high is all a datapath can be asked for here.
func (r *BenchReport) printOverloadTargets(w io.Writer) {
	var ref *Saturation
	for _, s := range r.Overload {
		if s.Setup == SetupReference {
			ref = s
		}
	}
	for _, s := range r.Overload {
		if s == ref {
			continue
		}
		verdict := "met"
		switch {
		case s.Max <= 0:
			verdict = "not measured"
		case ref == nil || ref.Max <= 0:
			verdict = "not compared: no reference curve"
		case !s.Offered150():
			verdict = fmt.Sprintf("not offered (%.0f %% at most)", 100*s.Offered/s.Max)
		case !ref.Offered150():
			verdict = fmt.Sprintf("reference not offered (%.0f %% at most)", 100*ref.Offered/ref.Max)
		case s.Forwarded/s.Max < ref.Forwarded/ref.Max:
			verdict = "NOT met"
		}
		want := "-"
		if ref != nil && ref.Max > 0 {
			want = ratio(ref.Forwarded, ref.Max)
		}
		fmt.Fprintf(w, "  %5d bytes  %-42s %5s (want >= the reference's %s at 150 %% offered) %s\n", s.Size, s.Setup+", overload / max", ratio(s.Forwarded, s.Max), want, verdict)
	}
}

func nsPer(pps float64) string {
	if pps <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", 1e9/pps)
}

func added(pps, ceil float64) string {
	if pps <= 0 || ceil <= 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f", 1e9/pps-1e9/ceil)
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func (s *Saturation) print(w io.Writer) {
	if s.Max <= 0 {
		fmt.Fprintf(w, "  %s: nothing forwarded\n", s.Setup)
		return
	}
	fmt.Fprintf(w, "  %s: max %.2f Mpps; offered %.2f Mpps (%.0f %% of max) -> forwarded %.2f Mpps (%.0f %% of max)\n",
		s.Setup, s.Max/1e6, s.Offered/1e6, 100*s.Offered/s.Max, s.Forwarded/1e6, 100*s.Forwarded/s.Max)
	fmt.Fprintf(w, "    load curve, offered -> forwarded Mpps:")
	for _, p := range s.Curve {
		fmt.Fprintf(w, "  %.2f->%.2f", p.Offered/1e6, p.Forwarded/1e6)
	}
	fmt.Fprintln(w)
	if !s.Offered150() {
		fmt.Fprintf(w, "    (flat out, one core offers only %.0f %% of this maximum: 150 %% cannot be offered)\n", 100*s.Offered/s.Max)
	}
	if worst, n := s.beyond(1.5); n > 0 {
		fmt.Fprintf(w, "    at the %d load(s) offered beyond 150 %% of max: forwarded at least %.0f %% of max\n", n, 100*worst/s.Max)
	}
}

// beyond returns the least forwarded over the points offered at least f
// times the maximum, and how many there are.
func (s *Saturation) beyond(f float64) (worst float64, n int) {
	for _, p := range s.Curve {
		if p.Offered >= f*s.Max {
			if n == 0 || p.Forwarded < worst {
				worst = p.Forwarded
			}
			n++
		}
	}
	return worst, n
}

// Offered150 reports whether the overload point was offered near enough
// the 150 % asked for to count (nearly150).
func (s *Saturation) Offered150() bool { return s.Max > 0 && s.Offered >= nearly150*s.Max }
