package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/lab/bpf"
	"github.com/ncpos/ncpos/pcapng"
)

// BenchOptions configure RunBench.
type BenchOptions struct {
	Forwarderd string        // forwarderd binary (BuildForwarderd)
	RunDir     string        // for forwarderd's socket and log
	Duration   time.Duration // per figure; 2s when 0
	Sizes      []int         // frame sizes with FCS, as RFC 2544 counts them; 64 and 1518 when empty
	Out        io.Writer     // progress; nothing when nil
	// Rounds repeats every measurement and keeps each setup's best, as
	// whatever else runs on the host can only slow a setup down (2).
	Rounds int
	// Only limits the run to the setups whose names contain one of these
	// (SetupOverload for the overload curve); everything when empty.
	Only []string
}

// Wants reports whether setup is to be measured.
func (o *BenchOptions) Wants(setup string) bool {
	for _, s := range o.Only {
		if strings.Contains(setup, s) {
			return true
		}
	}
	return len(o.Only) == 0
}

// BenchRow is one measured figure.
type BenchRow struct {
	Setup   string
	Size    int     // with FCS
	PPS     float64 // frames per second that reached the sink
	Offered float64 // frames per second the generator sent
	Sink    string  // SinkXDP or SinkTC: where the sink counted
}

// Where the sink counts. Frames redirected by XDP reach a veth's peer only
// through an XDP program, so every setup is measured with the XDP sink; a
// datapath that transmits socket buffers (the Linux bridge, AF_XDP in copy
// mode) is measured with the tc sink too, and the better figure is kept:
// an XDP program on a veth makes the veth copy each such buffer into an
// XDP buffer first (kmalloc'd heads cannot be used in place), a cost of the
// harness that a NIC transmitting the frame does not have.
const (
	SinkXDP = "xdp"
	SinkTC  = "tc"
)

// BenchReport is everything RunBench measured in one run.
type BenchReport struct {
	Rounds   int
	CPUs     int
	GenCPU   int
	Duration time.Duration
	Rows     []BenchRow
	Overload []*Saturation
	RFC2544  *RFC2544Figure // the self-test's search through xdp forward, at the first size
}

// Saturation is an overload figure: a datapath with the forwarding core to
// itself, the most it forwarded over a load curve, and what it forwarded
// when offered half as much again (or, where the generator cannot offer
// that much, the most it can).
type Saturation struct {
	Setup                   string
	Size                    int
	Max, Offered, Forwarded float64
	Curve                   []LoadPoint // from light load to flat out
}

// LoadPoint is one point of the load curve.
type LoadPoint struct{ Offered, Forwarded float64 }

// Setups, in the order they are measured and printed.
const (
	SetupCeiling    = "ceiling: generator -> XDP_DROP"
	SetupBridge     = "Linux bridge (no netfilter)"
	SetupReference  = "devmap redirect reference"
	SetupXDPForward = "ncpos xdp forward"
	SetupNoHook     = "ncpos xdp forward, no capture hook"
	SetupCapturing  = "ncpos xdp forward, capturing all"
	SetupXDPSvc1    = "ncpos xdp service, 1 flow"
	SetupXDPSvc10k  = "ncpos xdp service, 10000 flows"
	SetupAFXDP      = "ncpos afxdp forward"
	SetupOverload   = "overload"
)

// Setups lists every setup RunBench measures, for BenchOptions.Only.
var Setups = []string{SetupCeiling, SetupBridge, SetupReference, SetupXDPForward, SetupNoHook, SetupCapturing, SetupXDPSvc1, SetupXDPSvc10k, SetupAFXDP,
	SetupRFC2544, SetupOverload}

const (
	ceilingSink = 60 // sink id of the XDP_DROP program on the port itself
	benchFlows  = 10000
)

// RunBench measures, in one lab, the forwarding rate of every setup at
// every size: the generator sends from one traffic end of a segment as fast
// as one core can, and the sink at the other end counts. On veth the
// generator, the datapath and the sink share the generator's core (one
// softirq context), so the honest comparison is the cost per frame: the
// report gives it, and its excess over the ceiling.
func RunBench(ctx context.Context, o BenchOptions) (*BenchReport, error) {
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	if len(o.Sizes) == 0 {
		o.Sizes = []int{64, 1518}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Rounds < 1 {
		o.Rounds = 2
	}
	// Every setup is measured against a generator that outruns it: an
	// AF_XDP socket sends a fraction of what the datapaths forward, and
	// each row would measure the socket.
	if err := xdptraffic.LiveFrames(); err != nil {
		return nil, fmt.Errorf("the lab's comparisons need a generator faster than every setup, the kernel's live frames: %w", err)
	}
	// What a killed bench left behind goes first.
	if err := Cleanup(Prefix + "bnch-"); err != nil {
		return nil, err
	}
	l, err := New(Config{ID: "bnch", Segments: 1})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	sinks, err := l.AttachSinks(false)
	if err != nil {
		return nil, err
	}
	defer sinks.Close()
	gen1, err := l.Generator(0, 0, 0)
	if err != nil {
		return nil, err
	}
	defer gen1.Close()
	genN, err := l.Generator(0, 0, benchFlows)
	if err != nil {
		return nil, err
	}
	defer genN.Close()

	b := &ppsBench{lab: l, sinks: sinks, o: o, gen1: gen1, genN: genN}
	rep := &BenchReport{CPUs: runtime.NumCPU(), GenCPU: 0, Duration: o.Duration, Rounds: o.Rounds}
	best := map[[2]any]int{} // setup and size -> index in rep.Rows
	for round := 1; round <= o.Rounds; round++ {
		fmt.Fprintf(o.Out, "round %d of %d\n", round, o.Rounds)
		for _, size := range o.Sizes {
			rows, err := b.setups(ctx, size)
			if err != nil {
				return nil, err
			}
			for _, row := range rows {
				key := [2]any{row.Setup, row.Size}
				if i, ok := best[key]; !ok {
					best[key] = len(rep.Rows)
					rep.Rows = append(rep.Rows, row)
				} else if row.PPS > rep.Rows[i].PPS {
					rep.Rows[i] = row
				}
			}
		}
	}
	if o.Wants(SetupRFC2544) {
		size := o.Sizes[0]
		// The search tries up to what the generator offered flat out
		// into the ceiling's drop.
		maxPPS := rep.find(SetupCeiling, size)
		if maxPPS == 0 {
			maxPPS = bench.LinePPS(size, 1e9)
		}
		if rep.RFC2544, err = b.rfc2544(ctx, size, maxPPS); err != nil {
			return nil, fmt.Errorf("RFC 2544: %w", err)
		}
	}
	if !o.Wants(SetupOverload) {
		return rep, nil
	}
	if rep.Overload, err = b.overload(ctx, o.Sizes[0]); err != nil {
		return nil, fmt.Errorf("overload: %w", err)
	}
	return rep, nil
}

// ppsBench is one run of RunBench: the lab, its sinks and generators.
type ppsBench struct {
	lab        *Lab
	sinks      *Sinks
	o          BenchOptions
	gen1, genN *xdptraffic.Generator // one flow, benchFlows flows
}

// setups measures every setup once at one frame size.
func (b *ppsBench) setups(ctx context.Context, size int) ([]BenchRow, error) {
	frame := frames.UDPFrame(size-4, 10000, 9)
	var rows []BenchRow
	// add records a figure; a second sink's figure for the same setup
	// replaces the first only when it is better.
	add := func(setup, sink string, pps, offered float64, err error) error {
		if err != nil {
			return fmt.Errorf("%s, %d bytes, %s sink: %w", setup, size, sink, err)
		}
		fmt.Fprintf(b.o.Out, "  %4d bytes  %-32s %7.2f Mpps  (%s sink)\n", size, setup, pps/1e6, sink)
		row := BenchRow{Setup: setup, Size: size, PPS: pps, Offered: offered, Sink: sink}
		if n := len(rows); n > 0 && rows[n-1].Setup == setup {
			if pps > rows[n-1].PPS {
				rows[n-1] = row
			}
			return nil
		}
		rows = append(rows, row)
		return nil
	}
	// Ceiling: the port itself drops what arrives.
	if b.o.Wants(SetupCeiling) {
		lk, err := b.sinks.attachPort(b.lab.FW, b.lab.Segments[0].Ports[0], ceilingSink)
		if err != nil {
			return nil, err
		}
		pps, off, err := b.measure(ctx, b.gen1, frame, ceilingSink, 0)
		lk.Close()
		if err := add(SetupCeiling, SinkXDP, pps, off, err); err != nil {
			return nil, err
		}
	}
	if b.o.Wants(SetupBridge) {
		for _, sink := range []string{SinkXDP, SinkTC} {
			pps, off, err := b.withSink(sink, func() (float64, float64, error) { return b.bridge(ctx, b.gen1, frame) })
			if err := add(SetupBridge, sink, pps, off, err); err != nil {
				return nil, err
			}
		}
	}
	if b.o.Wants(SetupReference) {
		pps, off, err := b.reference(ctx, b.gen1, frame)
		if err := add(SetupReference, SinkXDP, pps, off, err); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct {
		setup string
		gen   *xdptraffic.Generator
		sinks []string
		args  []string
	}{
		{SetupXDPForward, b.gen1, []string{SinkXDP}, []string{"-engine", "xdp", "-mode", "forward"}},
		{SetupNoHook, b.gen1, []string{SinkXDP}, []string{"-engine", "xdp", "-mode", "forward", "-no-capture"}},
		{SetupXDPSvc1, b.gen1, []string{SinkXDP}, []string{"-engine", "xdp", "-mode", "service"}},
		{SetupXDPSvc10k, b.genN, []string{SinkXDP}, []string{"-engine", "xdp", "-mode", "service"}},
		{SetupAFXDP, b.gen1, []string{SinkXDP, SinkTC}, []string{"-engine", "afxdp", "-mode", "forward"}},
	} {
		if !b.o.Wants(c.setup) {
			continue
		}
		for _, sink := range c.sinks {
			pps, off, err := b.withSink(sink, func() (float64, float64, error) { return b.forwarderd(ctx, c.gen, frame, c.args...) })
			if err := add(c.setup, sink, pps, off, err); err != nil {
				return nil, err
			}
		}
	}
	if b.o.Wants(SetupCapturing) {
		pps, off, err := b.capturing(ctx, b.gen1, frame, size)
		if err := add(SetupCapturing, SinkXDP, pps, off, err); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// capturing measures xdp forward while a capture of every frame entering
// the measured port runs, read as a client would read it: what the
// filter, the rate cap and the ring cost the segment.
func (b *ppsBench) capturing(ctx context.Context, g *xdptraffic.Generator, frame []byte, size int) (float64, float64, error) {
	d, err := b.startForwarderd("-engine", "xdp", "-mode", "forward")
	if err != nil {
		return 0, 0, err
	}
	defer d.Stop()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// It outlasts the stream by a little and then ends by itself, so
	// that its last block, with its account, reaches the reader.
	secs := int(b.o.Duration/time.Second) + 2
	body, err := d.Capture(cctx, forwarderapi.CaptureRequest{Port: b.lab.Segments[0].Ports[0], Seconds: secs})
	if err != nil {
		return 0, 0, fmt.Errorf("starting the capture: %w", err)
	}
	defer body.Close()
	// The capture's own account, from its last block: how much of the
	// stream it kept, and what the rate cap and a full ring left out.
	summary := make(chan string)
	go func() {
		var last string
		r, err := pcapng.NewReader(body)
		for err == nil {
			var blk pcapng.Block
			if blk, err = r.Next(); err == nil {
				if st, ok := blk.(*pcapng.StatsBlock); ok {
					last = strings.Join(st.Comments, "; ")
				}
			}
		}
		summary <- last
	}()
	pps, off, err := b.measure(ctx, g, frame, SinkID(0, 1), 0)
	var s string
	select {
	case s = <-summary:
	case <-time.After(time.Duration(secs+10) * time.Second):
		cancel()
		s = <-summary
	}
	fmt.Fprintf(b.o.Out, "  %4d bytes  capture: %s\n", size, s)
	if s == "" && err == nil {
		err = errors.New("the capture ended without its statistics")
	}
	return pps, off, err
}

// withSink runs measure with the sink of the first segment's second end
// counting at sink (SinkXDP or SinkTC).
func (b *ppsBench) withSink(sink string, measure func() (float64, float64, error)) (float64, float64, error) {
	if sink == SinkXDP {
		return measure()
	}
	restore, err := b.sinks.SKBSink(0, 1)
	if err != nil {
		return 0, 0, err
	}
	pps, off, err := measure()
	return pps, off, errors.Join(err, restore())
}

// measure runs the generator (paced to pps when > 0) for a warm-up and
// the measuring time, and returns the rate the sink saw and the rate
// offered. The CPU is shared with whatever else runs on the host, which can
// only slow a setup down, so both are those of the half-second window in
// which the sink saw the most.
func (b *ppsBench) measure(ctx context.Context, g *xdptraffic.Generator, frame []byte, sink int, pps float64) (fwd, offered float64, err error) {
	const (
		warmup = 300 * time.Millisecond
		step   = 100 * time.Millisecond
		window = 5 // steps
	)
	type result struct {
		sent uint64
		d    time.Duration
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// The generator keeps to CPU 0, the management core, so that
		// forwarderd's own threads (afxdp) have the forwarding core.
		start := time.Now()
		sent, err := g.Run(ctx, xdptraffic.Send{Frame: frame, RatePPS: pps, For: warmup + b.o.Duration + step})
		done <- result{sent.Frames, time.Since(start), err}
	}()
	time.Sleep(warmup)
	type point struct {
		got, sent uint64
		t         time.Time
	}
	var pts []point
	for end := time.Now().Add(b.o.Duration); ; {
		n, _, cerr := b.sinks.xs.Count(sink)
		sent, gerr := g.Progress()
		if cerr != nil || gerr != nil {
			err = errors.Join(cerr, gerr)
			break
		}
		pts = append(pts, point{n, sent, time.Now()})
		if time.Now().After(end) {
			break
		}
		time.Sleep(step)
	}
	r := <-done
	if err == nil {
		err = r.err
	}
	var best float64
	for i := 0; i < len(pts); i++ {
		j := min(i+window, len(pts)-1)
		if j == i || (j-i < window && i > 0) {
			continue
		}
		a, z := pts[i], pts[j]
		dt := z.t.Sub(a.t).Seconds()
		if rate := float64(z.got-a.got) / dt; rate > best {
			best, offered = rate, float64(z.sent-a.sent)/dt
		}
	}
	return best, offered, err
}

// bridge measures a Linux bridge joining the two ports in the forwarder's
// namespace, with GRO on the ingress port so that the veth accepts the
// generator's XDP frames, and bridge netfilter off.
func (b *ppsBench) bridge(ctx context.Context, g *xdptraffic.Generator, frame []byte) (float64, float64, error) {
	fw, seg := b.lab.FW, b.lab.Segments[0]
	undo, err := b.lab.Bridge(0)
	if err != nil {
		return 0, 0, err
	}
	defer undo()
	if err := fw.Do(func() error { return setGRO(seg.Ports[0], true) }); err != nil {
		return 0, 0, err
	}
	defer fw.Do(func() error { return setGRO(seg.Ports[0], false) })
	return b.measure(ctx, g, frame, SinkID(0, 1), 0)
}

// reference measures the smallest useful XDP forwarder: one devmap
// redirect to a fixed port, no counters, no parsing.
func (b *ppsBench) reference(ctx context.Context, g *xdptraffic.Generator, frame []byte) (float64, float64, error) {
	detach, err := b.attachReference()
	if err != nil {
		return 0, 0, err
	}
	defer detach()
	return b.measure(ctx, g, frame, SinkID(0, 1), 0)
}

// attachReference attaches the reference program to the first port,
// redirecting to the second; the returned function detaches it.
func (b *ppsBench) attachReference() (func(), error) {
	fw, seg := b.lab.FW, b.lab.Segments[0]
	var objs bpf.LabObjects
	if err := bpf.LoadLabObjects(&objs, nil); err != nil {
		return nil, fmt.Errorf("loading the reference: %w", err)
	}
	prog, egress := objs.Reference, objs.RefEgress
	in, err := fw.Link(seg.Ports[0])
	if err == nil {
		var out netlink.Link
		out, err = fw.Link(seg.Ports[1])
		if err == nil {
			var lk link.Link
			err = fw.Do(func() (err error) {
				// A DEVMAP resolves the ifindex in the caller's namespace:
				// this must run inside the forwarder's, or it would name
				// a host device.
				if err := egress.Put(uint32(0), uint32(out.Attrs().Index)); err != nil {
					return err
				}
				lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: in.Attrs().Index, Flags: link.XDPDriverMode})
				return err
			})
			if err == nil {
				return func() { lk.Close(); prog.Close(); egress.Close() }, nil
			}
			err = fmt.Errorf("attaching the reference: %w", err)
		}
	}
	prog.Close()
	egress.Close()
	return nil, err
}

// forwarderd measures forwarderd started with args.
func (b *ppsBench) forwarderd(ctx context.Context, g *xdptraffic.Generator, frame []byte, args ...string) (float64, float64, error) {
	d, err := b.startForwarderd(args...)
	if err != nil {
		return 0, 0, err
	}
	defer d.Stop()
	return b.measure(ctx, g, frame, SinkID(0, 1), 0)
}

// startForwarderd starts forwarderd with args and waits until it is
// healthy; the caller stops it.
func (b *ppsBench) startForwarderd(args ...string) (*Daemon, error) {
	d, err := b.lab.StartForwarderd(b.o.Forwarderd, b.o.RunDir, args...)
	if err != nil {
		return nil, err
	}
	if err := d.WaitHealthy(10 * time.Second); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}
