package selftest

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/dataport"
	"github.com/ncpos/ncpos/dataport/fence"
	"github.com/ncpos/ncpos/web/api"
)

// selfTester adapts package bench to the web API's self-test job: the
// RFC 2544 throughput search between the test ports that [selftest]
// cables to each segment's two ports, its report written where statusd
// reads it.
type selfTester struct {
	config      func() *config.Config // the configuration in force
	sysClassNet string                // config.SysClassNet; tests pass a fake tree
	report      string                // the self-test report file
}

// New is the self-test job of the configuration in force, as cfg
// returns it when a test starts.
func New(ctx context.Context, cfg func() *config.Config, report string) *Jobs {
	s := &selfTester{config: cfg, sysClassNet: config.SysClassNet, report: report}
	return &Jobs{Cabled: s.ready, Run: s.run, Context: ctx}
}

func (s *selfTester) ready() error {
	if len(s.config().SelfTestPaths()) == 0 {
		return errors.New("no self-test cabling: [selftest] ports must cable a test port to each of a segment's two ports")
	}
	return nil
}

// streams maps the cabled segments to interfaces: one stream per
// segment, and the segment it measures (without its Trial yet).
func (s *selfTester) streams() ([]bench.PortStream, []Segment, error) {
	paths := s.config().SelfTestPaths()
	prof := s.config().Profile()
	if prof == nil {
		return nil, nil, fmt.Errorf("unknown platform %q", s.config().Platform)
	}
	ifs, resolveErr := prof.Resolve(s.sysClassNet)
	var (
		streams  []bench.PortStream
		segments []Segment
	)
	for _, p := range paths {
		snd, rcv := ifs[p.Sender], ifs[p.Receiver]
		if snd == "" || rcv == "" {
			return nil, nil, fmt.Errorf("test ports %s and %s of segment %s: %v", p.Sender, p.Receiver, p.Segment, resolveErr)
		}
		streams = append(streams, bench.PortStream{Name: p.Segment, Sender: bench.PortEnd{Ifname: snd}, Receiver: bench.PortEnd{Ifname: rcv}})
		seg := Segment{Name: p.Segment, Direction: p.From + " → " + p.To}
		if s.config().SelfTest.Directions == 2 {
			seg.Reverse = p.To + " → " + p.From
		}
		segments = append(segments, seg)
	}
	return streams, segments, nil
}

// expect is what the configuration asks of each size (selftest.expect).
func (s *selfTester) expect(size int) (float64, string) {
	e := s.config().SelfTest.Expectation(size)
	return e.MinPPS(size, s.config().SelfTest.LineBPS()), e.String()
}

// carrierWait is how long a test port may take to find its link once up
// (autonegotiation on copper takes a few seconds).
const carrierWait = 10 * time.Second

func (s *selfTester) run(ctx context.Context, sizes []int, progress func(size, index, total int)) (string, error) {
	// One configuration for the whole run, whatever is applied meanwhile.
	cfg := s.config()
	fixed := *s
	fixed.config = func() *config.Config { return cfg }
	return fixed.runOn(ctx, sizes, progress)
}

func (s *selfTester) runOn(ctx context.Context, sizes []int, progress func(size, index, total int)) (string, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	streams, segments, err := s.streams()
	if err != nil {
		return "", err
	}
	if sizes == nil {
		sizes = s.config().SelfTest.Sizes
	}
	plan := Plan{
		Segments: segments, Sizes: sizes, Trial: s.config().SelfTest.Trial.Duration, LineBPS: s.config().SelfTest.LineBPS(),
		Expect: s.expect, LatencyTrials: s.config().SelfTest.LatencyTrials, Path: s.report, Log: log.Writer(), Progress: progress,
	}
	// Bad input and busy ports are refused before a port is touched.
	if err := plan.Check(); err != nil {
		return "", err
	}
	ports := s.testPorts(streams)
	for _, tp := range ports {
		if err := portBusy(tp.ifname); err != nil {
			return "", fmt.Errorf("test port %s (%s) is busy: %w", tp.name, tp.ifname, err)
		}
	}
	// Test ports are data ports: silent and fenced while the test has them
	// up, and down again after.
	for _, tp := range ports {
		if err := dataport.Quiet("/", tp.ifname); err != nil {
			return "", err
		}
		defer func() {
			if err := dataport.Down(tp.ifname); err != nil {
				log.Printf("self-test: %v", err)
			}
		}()
		if err := fence.Install(tp.ifname); err != nil {
			return "", err
		}
		if err := bringUp(tp.ifname); err != nil {
			return "", fmt.Errorf("test port %s: %w", tp.name, err)
		}
	}
	if err := waitCarrier(ctx, s.sysClassNet, ports, carrierWait); err != nil {
		return "", err
	}
	for i, st := range streams {
		both := []bench.PortStream{st}
		if segments[i].Reverse != "" {
			both = append(both, st.Reverse())
		}
		pt, err := bench.NewPorts(both, 16)
		if err != nil {
			return "", err
		}
		defer pt.Close()
		plan.Segments[i].T = pt
	}
	log.Printf("self-test: RFC 2544 throughput on %d segment(s), sizes %v", len(segments), sizes)
	st, err := Run(ctx, plan)
	for _, seg := range plan.Segments {
		log.Printf("self-test traffic, %s: %s", seg.Name, strings.Join(seg.T.(*bench.PortTarget).Engines(), "; "))
	}
	if err != nil {
		return "", err
	}
	switch st.Verdict {
	case api.VerdictPassed:
		return "PASSED: " + st.Summary, nil
	case api.VerdictInconclusive:
		// Not a bad box: the test ports could not offer the rate.
		return "INCONCLUSIVE: " + st.Summary, errors.New("self-test inconclusive (the test ports could not offer the expected rate): " + st.Summary)
	}
	return "FAILED: " + st.Summary, errors.New("self-test failed: " + st.Summary)
}
