package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/lab"
	"github.com/ncpos/ncpos/web/selftest"
)

// benchArgs is `ncpos bench`'s command line, checked before any traffic.
type benchArgs struct {
	compare       *lab.BenchOptions // -compare: the lab's comparisons instead of RFC 2544
	target        string
	configs       []int // segments per configuration
	ports         []int // segments that carry traffic; all when nil
	sizes         []int
	lineBPS       float64
	maxPct        float64
	opts          bench.Options
	flows         int
	directions    int
	json, csv     string
	svg, selftest string
	expect        selftest.Expect
}

func parseBenchArgs(args []string, stderr io.Writer) (*benchArgs, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", lab.TargetForwarder, "what forwards between the test ports: forwarder (ncpos forwarderd, xdp engine), bridge (Linux bridge) or sim (simulated device, no traffic)")
	segments := fs.String("segments", "1", "configurations to measure, by number of segments: 1 or 1,2,3")
	ports := fs.String("ports", "", "segments that carry traffic, e.g. seg0,seg1 (default: all of each configuration)")
	sizes := fs.String("sizes", "64,128,256,512,1024,1280,1518", "frame sizes in bytes with FCS, comma-separated")
	jumbo := fs.Bool("jumbo", false, "allow frame sizes above 1518 (up to 9018)")
	trial := fs.Duration("trial", 2*time.Second, "length of each trial (RFC 2544: 60s)")
	resolution := fs.Float64("resolution", 1, "throughput search resolution, % of line rate")
	loss := fs.Float64("loss", 0, "acceptable frame loss in %")
	retries := fs.Int("retries", 2, "times a throughput trial the tester stalled in (no loss, but its generator up to 5% short of the rate asked, or its port dropping) is run again; every attempt is printed")
	lineRate := fs.String("line-rate", "1G", "nominal line rate of each port (on veth it is virtual): 100M, 1G, 10G, ...")
	maxRate := fs.String("max-rate", "100%", "highest rate tried: % of line rate, or frames/s at the smallest size")
	flows := fs.Int("flows", 256, "flows per stream (addresses and ports varied)")
	directions := fs.Int("directions", 1, "1 (a to b) or 2 (both)")
	latency := fs.Bool("latency", true, "measure latency at the throughput rate")
	frameLoss := fs.Bool("frame-loss", false, "frame-loss test from 100% down to 10% of line rate")
	b2b := fs.Int("b2b", 0, "back-to-back test: longest burst tried, frames (0: no test)")
	b2bRepeat := fs.Int("b2b-repeat", 5, "bursts each back-to-back length must pass (RFC 2544: 50)")
	jsonOut := fs.String("json", "", "write the full report (every trial) as JSON to this file")
	csvOut := fs.String("csv", "", "write the results as CSV to this file")
	svgOut := fs.String("svg", "", "write the throughput chart as SVG to this file")
	selftestOut := fs.String("selftest", "", "write the first configuration as statusd's self-test report (latest.json) to this file")
	expect := fs.String("expect", "95%", "with -selftest: what every size must reach per stream, a share of line rate (95%) or a frame rate (1.2Mpps)")
	compare := fs.Bool("compare", false, "instead of RFC 2544: frames per second of the lab's setups side by side (ceiling, Linux bridge, devmap reference, ncpos engines, the self-test's search, overload curves); takes -sizes (64,1518 by default), -trial, -rounds and -only")
	rounds := fs.Int("rounds", 2, "with -compare: measure everything this many times and keep each setup's best")
	only := fs.String("only", "", "with -compare: comma-separated words: measure only the setups whose names contain one ("+strings.Join(lab.Setups, "; ")+")")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *compare {
		return parseCompare(set, *sizes, *trial, *rounds, *only)
	}
	for _, name := range []string{"rounds", "only"} {
		if set[name] {
			return nil, fmt.Errorf("-%s applies only with -compare", name)
		}
	}
	a := &benchArgs{target: *target, flows: *flows, directions: *directions,
		json: *jsonOut, csv: *csvOut, svg: *svgOut, selftest: *selftestOut}
	e, perr := config.ParseExpectation(*expect)
	if perr != nil {
		return nil, fmt.Errorf("-expect: %w", perr)
	}
	a.expect = func(size int) (float64, string) { return e.MinPPS(size, a.lineBPS), e.String() }
	switch a.target {
	case lab.TargetForwarder, lab.TargetBridge, bench.TargetSim:
	default:
		return nil, fmt.Errorf("-target %q: want forwarder, bridge or sim", a.target)
	}
	maxSegs := 0
	for _, s := range strings.Split(*segments, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 8 {
			return nil, fmt.Errorf("-segments: %q is not a number of segments from 1 to 8", s)
		}
		a.configs = append(a.configs, n)
		maxSegs = max(maxSegs, n)
	}
	if *ports != "" {
		for _, p := range strings.Split(*ports, ",") {
			p = strings.TrimSpace(p)
			n, err := strconv.Atoi(strings.TrimPrefix(p, "seg"))
			if !strings.HasPrefix(p, "seg") || err != nil || n < 0 || n >= maxSegs {
				return nil, fmt.Errorf("-ports: unknown port %q: the lab's test ports are seg0 to seg%d", p, maxSegs-1)
			}
			a.ports = append(a.ports, n)
		}
		for _, c := range a.configs {
			for _, p := range a.ports {
				if p >= c {
					return nil, fmt.Errorf("-ports: unknown port seg%d in the %d-segment configuration (seg0 to seg%d)", p, c, c-1)
				}
			}
		}
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("-sizes: %q is not a frame size", s)
		}
		if err := bench.CheckSize(n, *jumbo); err != nil {
			return nil, fmt.Errorf("-sizes: %w", err)
		}
		if n > 1518 && a.target != bench.TargetSim {
			return nil, fmt.Errorf("-sizes: %d: the lab's veths have an MTU of 1500, so jumbo frames only run against -target sim", n)
		}
		a.sizes = append(a.sizes, n)
	}
	var err error
	if a.lineBPS, err = parseBPS(*lineRate); err != nil {
		return nil, fmt.Errorf("-line-rate: %w", err)
	}
	if a.maxPct, err = parseMaxRate(*maxRate, a.sizes, a.lineBPS); err != nil {
		return nil, fmt.Errorf("-max-rate: %w", err)
	}
	if a.flows < 1 || a.flows > 65536 {
		return nil, fmt.Errorf("-flows %d: want 1 to 65536", a.flows)
	}
	if a.directions != 1 && a.directions != 2 {
		return nil, fmt.Errorf("-directions %d: want 1 or 2", a.directions)
	}
	if *trial < 10*time.Millisecond {
		return nil, fmt.Errorf("-trial %v: at least 10ms", *trial)
	}
	if *retries < 0 {
		return nil, fmt.Errorf("-retries %d: 0 or more", *retries)
	}
	if *b2b < 0 || *b2bRepeat < 1 {
		return nil, errors.New("-b2b must be 0 or more and -b2b-repeat at least 1")
	}
	a.opts = bench.Options{LineBPS: a.lineBPS, Trial: *trial, Resolution: *resolution, AcceptableLoss: *loss,
		MaxRate: a.maxPct, Latency: *latency, B2BMax: *b2b, B2BRepeat: *b2bRepeat, LossSteps: []float64{}, Retries: *retries}
	if *retries == 0 {
		a.opts.Retries = -1 // none
	}
	if *frameLoss {
		a.opts.LossSteps = nil
	}
	if err := a.opts.Check(); err != nil {
		return nil, err
	}
	return a, nil
}

// compareFlags are the flags -compare takes.
var compareFlags = []string{"compare", "sizes", "trial", "rounds", "only"}

// parseCompare checks the command line of `ncpos bench -compare`.
func parseCompare(set map[string]bool, sizes string, trial time.Duration, rounds int, only string) (*benchArgs, error) {
	for name := range set {
		if !slices.Contains(compareFlags, name) {
			return nil, fmt.Errorf("-%s applies to the RFC 2544 bench, not to -compare (which takes -%s)", name, strings.Join(compareFlags[1:], ", -"))
		}
	}
	o := &lab.BenchOptions{Duration: trial, Rounds: rounds, Out: os.Stdout}
	if !set["sizes"] {
		sizes = "64,1518"
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 64 || n > 1518 {
			return nil, fmt.Errorf("-sizes: %q is not a frame size between 64 and 1518", s)
		}
		o.Sizes = append(o.Sizes, n)
	}
	if trial < 100*time.Millisecond {
		return nil, fmt.Errorf("-trial %v: at least 100ms with -compare", trial)
	}
	if rounds < 1 {
		return nil, fmt.Errorf("-rounds %d: at least 1", rounds)
	}
	for _, w := range strings.Split(only, ",") {
		if w = strings.TrimSpace(w); w != "" {
			o.Only = append(o.Only, w)
		}
	}
	if len(o.Only) > 0 && !slices.ContainsFunc(lab.Setups, o.Wants) {
		return nil, fmt.Errorf("-only %q names no setup; setups are: %s", only, strings.Join(lab.Setups, "; "))
	}
	return &benchArgs{compare: o}, nil
}

// errNeedRoot is why the lab does not run for other users.
var errNeedRoot = errors.New("the lab needs root (network namespaces, XDP, AF_XDP)")

// benchForwarderd builds forwarderd into a run directory of its own,
// which cleanup removes.
func benchForwarderd() (bin, dir string, cleanup func(), err error) {
	if dir, err = os.MkdirTemp("", "ncpos-bench"); err != nil {
		return "", "", nil, err
	}
	fmt.Println("building forwarderd ...")
	if bin, err = lab.BuildForwarderd(dir); err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	return bin, dir, func() { os.RemoveAll(dir) }, nil
}

// runCompare measures the lab's setups side by side (lab.RunBench).
func runCompare(ctx context.Context, o lab.BenchOptions) error {
	if os.Geteuid() != 0 {
		return errNeedRoot
	}
	bin, dir, cleanup, err := benchForwarderd()
	if err != nil {
		return err
	}
	defer cleanup()
	o.Forwarderd, o.RunDir = bin, dir
	rep, err := lab.RunBench(ctx, o)
	if err != nil {
		return err
	}
	fmt.Println()
	rep.Print(os.Stdout)
	return nil
}

// parseBPS reads 100M, 1G, 2.5G, 10G or a plain number of bits per second.
func parseBPS(s string) (float64, error) {
	mult := 1.0
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B/S"), "BPS")
	switch {
	case strings.HasSuffix(t, "G"):
		mult, t = 1e9, strings.TrimSuffix(t, "G")
	case strings.HasSuffix(t, "M"):
		mult, t = 1e6, strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "K"):
		mult, t = 1e3, strings.TrimSuffix(t, "K")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a line rate (100M, 1G, 10G ...)", s)
	}
	if v*mult > 400e9 {
		return 0, fmt.Errorf("%q is above 400 Gb/s", s)
	}
	return v * mult, nil
}

// parseMaxRate reads "N%" or frames per second at the smallest size, and
// refuses anything above line rate.
func parseMaxRate(s string, sizes []int, lineBPS float64) (float64, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("%q is not a percentage of line rate", s)
		}
		if v > 100 {
			return 0, fmt.Errorf("%s is above line rate", s)
		}
		return v, nil
	}
	fps, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is neither N%% nor frames/s", s)
	}
	smallest := sizes[0]
	for _, z := range sizes {
		smallest = min(smallest, z)
	}
	if err := bench.CheckRate(fps, smallest, lineBPS); err != nil {
		return 0, err
	}
	return bench.PercentOfLine(fps, smallest, lineBPS), nil
}

func runBench(ctx context.Context, args []string) error {
	a, err := parseBenchArgs(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.compare != nil {
		return runCompare(ctx, *a.compare)
	}
	if a.target != bench.TargetSim && os.Geteuid() != 0 {
		return fmt.Errorf("%w; -target sim runs without", errNeedRoot)
	}
	var bin, dir string
	if a.target == lab.TargetForwarder {
		var cleanup func()
		if bin, dir, cleanup, err = benchForwarderd(); err != nil {
			return err
		}
		defer cleanup()
	}
	var reports []*bench.Report
	var runErr error
	for _, segs := range a.configs {
		rep, err := benchConfig(ctx, a, segs, bin, dir)
		if rep != nil {
			reports = append(reports, rep)
		}
		if err != nil {
			runErr = fmt.Errorf("%d-segment configuration: %w", segs, err)
			break
		}
	}
	fmt.Println()
	bench.WriteTable(os.Stdout, reports...)
	if err := writeBenchOutputs(a, reports, runErr); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

func benchConfig(ctx context.Context, a *benchArgs, segs int, bin, dir string) (*bench.Report, error) {
	ports := a.ports
	if ports == nil {
		for i := 0; i < segs; i++ {
			ports = append(ports, i)
		}
	}
	rep := &bench.Report{Target: a.target, Segments: len(ports), Directions: a.directions, LineBPS: a.lineBPS, Flows: a.flows,
		Trial: a.opts.Trial, Resolution: a.opts.Resolution, AcceptableLoss: a.opts.AcceptableLoss, Started: time.Now()}
	o := a.opts
	o.Streams = rep.Streams()
	o.Log = os.Stdout
	var trial bench.Trial
	var engines func() []string
	switch a.target {
	case bench.TargetSim:
		// A device of 800 Mb/s of frames with a 2000-frame buffer.
		trial = &bench.SimDevice{LineBPS: a.lineBPS, CapacityBPS: 0.8 * a.lineBPS, BufferFrames: 2000,
			Latency: 8 * time.Microsecond, Streams: o.Streams}
		rep.Notes = append(rep.Notes, "simulated device (800 Mb/s of frames per stream, 2000-frame buffer): no traffic was sent")
	default:
		lt, err := lab.NewTarget(lab.TargetOptions{Target: a.target, Segments: segs, Ports: ports, Flows: a.flows,
			Directions: a.directions, Forwarderd: bin, RunDir: dir})
		if err != nil {
			return nil, err
		}
		defer lt.Close()
		trial = lt
		engines = lt.Engines
		rep.Notes = append(rep.Notes, fmt.Sprintf("veth lab (%s): the line rate is nominal; the generator, target and analyzer share the host's CPUs; independent count: %s of the receiving veth", lt.Lab.Name("*"), bench.IndependentName))
	}
	fmt.Printf("%s: %d stream(s), %s per port\n", rep.Label(), o.Streams, bench.FormatBPS(a.lineBPS))
	r := &bench.Runner{T: trial, O: o}
	// What carries the traffic is known once the first trial has probed
	// the ports.
	defer func() {
		if engines != nil {
			rep.Notes = append(rep.Notes, "traffic: "+strings.Join(engines(), "; "))
		}
	}()
	for _, size := range a.sizes {
		sr, err := r.Size(ctx, size)
		if sr != nil {
			rep.Results = append(rep.Results, sr)
		}
		if err != nil {
			rep.Finished = time.Now()
			return rep, err
		}
	}
	rep.Finished = time.Now()
	return rep, nil
}

func writeBenchOutputs(a *benchArgs, reports []*bench.Report, runErr error) error {
	write := func(path string, fn func(io.Writer, ...*bench.Report) error) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := fn(f, reports...); err != nil {
			f.Close()
			return err
		}
		fmt.Printf("wrote %s\n", path)
		return f.Close()
	}
	err := errors.Join(write(a.json, bench.WriteJSON), write(a.csv, bench.WriteCSV), write(a.svg, bench.WriteSVG))
	if a.selftest != "" && len(reports) > 0 {
		r := reports[0]
		st := selftest.NewReport([]selftest.SegmentReport{{Name: r.Target, Direction: r.Label(), Report: r}}, a.expect, runErr)
		if e := selftest.WriteReport(a.selftest, st); e != nil {
			err = errors.Join(err, e)
		} else {
			fmt.Printf("wrote %s\n", a.selftest)
		}
	}
	return err
}
