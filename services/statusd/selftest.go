package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/dataport"
	"github.com/ncpos/ncpos/dataport/fence"
	"github.com/ncpos/ncpos/web"
)

// selfTester adapts package bench to the web API's self-test job: the
// RFC 2544 throughput search between the test ports that [selftest]
// cables to each segment's two ports, its report written where statusd
// reads it.
type selfTester struct {
	cfg         *config.Config
	sysClassNet string // config.SysClassNet; tests pass a fake tree
	report      string // the self-test report file
}

// newSelfTest is the self-test job of the configuration in effect.
func newSelfTest(ctx context.Context, cfg *config.Config, report string) *web.SelfTestJobs {
	s := &selfTester{cfg: cfg, sysClassNet: config.SysClassNet, report: report}
	return &web.SelfTestJobs{Ready: s.ready, Run: s.run, Context: ctx}
}

func (s *selfTester) ready() error {
	if len(s.cfg.SelfTestPaths()) == 0 {
		return errors.New("no self-test cabling: [selftest] ports must cable a test port to each of a segment's two ports")
	}
	return nil
}

// streams maps the cabled segments to interfaces.
func (s *selfTester) streams() ([]bench.PortStream, []string, error) {
	paths := s.cfg.SelfTestPaths()
	prof := s.cfg.Profile()
	if prof == nil {
		return nil, nil, fmt.Errorf("unknown platform %q", s.cfg.Platform)
	}
	ifs, resolveErr := prof.Resolve(s.sysClassNet)
	var (
		streams  []bench.PortStream
		segments []string
	)
	for _, p := range paths {
		snd, rcv := ifs[p.Sender], ifs[p.Receiver]
		if snd == "" || rcv == "" {
			return nil, nil, fmt.Errorf("test ports %s and %s of segment %s: %v", p.Sender, p.Receiver, p.Segment, resolveErr)
		}
		streams = append(streams, bench.PortStream{Name: p.Segment, Sender: bench.PortEnd{Ifname: snd}, Receiver: bench.PortEnd{Ifname: rcv}})
		segments = append(segments, p.Segment)
	}
	return streams, segments, nil
}

func (s *selfTester) run(ctx context.Context, sizes []int, progress func(size, index, total int)) (string, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	streams, segments, err := s.streams()
	if err != nil {
		return "", err
	}
	if sizes == nil {
		sizes = s.cfg.SelfTest.Sizes
	}
	// Test ports are data ports: silent and fenced while the test has them
	// up, and down again after.
	for _, st := range streams {
		for _, ifname := range []string{st.Sender.Ifname, st.Receiver.Ifname} {
			if err := dataport.Quiet("/", ifname); err != nil {
				return "", err
			}
			if err := fence.Install(ifname); err != nil {
				return "", err
			}
			defer func() {
				if err := dataport.Down(ifname); err != nil {
					log.Printf("self-test: %v", err)
				}
			}()
		}
	}
	pt, err := bench.NewPorts(streams, 16)
	if err != nil {
		return "", err
	}
	defer pt.Close()
	log.Printf("self-test: RFC 2544 throughput on %v, sizes %v", segments, sizes)
	st, err := bench.RunSelfTest(ctx, pt, bench.SelfTestPlan{
		Segments: segments, Sizes: sizes, Trial: s.cfg.SelfTest.Trial.Duration, LineBPS: s.cfg.SelfTest.LineBPS(),
		Path: s.report, Log: log.Writer(), Progress: progress,
	})
	log.Printf("self-test traffic: %s", strings.Join(pt.Engines(), "; "))
	if err != nil {
		return "", err
	}
	if !st.Passed {
		return "FAILED: " + st.Summary, errors.New("self-test failed: " + st.Summary)
	}
	return "PASSED: " + st.Summary, nil
}
