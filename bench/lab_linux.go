package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/lab"
)

// Targets the lab measures.
const (
	TargetForwarder = "forwarder" // ncpos forwarderd, xdp engine, forward mode
	TargetBridge    = "bridge"    // a Linux bridge joining the two ports
	TargetSim       = "sim"       // no traffic: the simulated device
)

// LabOptions configure a lab bench.
type LabOptions struct {
	Target     string // TargetForwarder or TargetBridge
	Segments   int    // lab segments; 1 when 0
	Ports      []int  // segments that carry traffic; all when nil
	Flows      int    // per stream; 1 when 0
	Forwarderd string // forwarderd binary (lab.BuildForwarderd), for TargetForwarder
	RunDir     string // forwarderd's socket and log
	// ForwarderdArgs are extra flags for forwarderd; "-engine xdp -mode
	// forward" when nil.
	ForwarderdArgs []string
	Log            io.Writer
}

// LabTarget is a lab with a target between the traffic ends of its
// segments, AF_XDP generators on side a and analyzers on side b. It
// implements Trial; every trial is compared with the receiving ends'
// kernel counters (rx_packets of the veth), an independent count of the
// same frames.
type LabTarget struct {
	Lab     *lab.Lab
	o       LabOptions
	streams []*labStream
	daemon  *lab.Daemon
	trial   uint16
	closers []func() error
}

type labStream struct {
	seg  *lab.Segment
	gen  *generator
	an   *analyzer
	spec FrameSpec
}

// NewLab builds a lab (namespaces and veths named ncpt-<id>-*), starts
// the target in it and prepares the generators and analyzers. Close
// removes all of it.
func NewLab(o LabOptions) (_ *LabTarget, err error) {
	if o.Segments <= 0 {
		o.Segments = 1
	}
	if o.Flows <= 0 {
		o.Flows = 1
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Target != TargetForwarder && o.Target != TargetBridge {
		return nil, fmt.Errorf("unknown target %q, want %s or %s", o.Target, TargetForwarder, TargetBridge)
	}
	if o.Target == TargetForwarder && o.Forwarderd == "" {
		return nil, errors.New("target forwarder needs a forwarderd binary")
	}
	if o.Ports == nil {
		for i := 0; i < o.Segments; i++ {
			o.Ports = append(o.Ports, i)
		}
	}
	for _, p := range o.Ports {
		if p < 0 || p >= o.Segments {
			return nil, fmt.Errorf("unknown port seg%d: the lab has seg0 to seg%d", p, o.Segments-1)
		}
	}
	id := "b" + strconv.FormatInt(int64(rand.IntN(36*36*36)), 36)
	l, err := lab.New(lab.Config{ID: id, Segments: o.Segments})
	if err != nil {
		return nil, err
	}
	t := &LabTarget{Lab: l, o: o}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	// Analyzers first: a veth drops what is redirected into it unless
	// its peer has an XDP program.
	for i, p := range o.Ports {
		seg := l.Segments[p]
		s := &labStream{seg: seg, spec: FrameSpec{Flows: o.Flows, SrcMAC: lab.MACA, DstMAC: lab.MACB, Stream: uint16(i)}}
		if s.an, err = newPortAnalyzer(PortEnd{Ifname: seg.HostIfs[1], NS: seg.Hosts[1]}, seg.HostIndex[1]); err != nil {
			return nil, fmt.Errorf("analyzer on %s: %w", seg.HostIfs[1], err)
		}
		s.an.start()
		err = seg.Hosts[0].Do(func() (err error) {
			x, err := newXSK(seg.HostIndex[0], &xskOptions)
			s.gen = &generator{xsk: x, frame: s.spec}
			return err
		})
		if err != nil {
			s.an.close()
			return nil, fmt.Errorf("generator on %s: %w", seg.HostIfs[0], err)
		}
		t.streams = append(t.streams, s)
	}
	switch o.Target {
	case TargetForwarder:
		args := o.ForwarderdArgs
		if args == nil {
			args = []string{"-engine", "xdp", "-mode", "forward"}
		}
		if o.RunDir == "" {
			o.RunDir = filepath.Join(os.TempDir(), "ncpos-bench-"+id)
		}
		t.daemon, err = l.StartForwarderd(o.Forwarderd, o.RunDir, args...)
		if err != nil {
			return nil, err
		}
		if err := t.daemon.WaitHealthy(15 * time.Second); err != nil {
			return nil, err
		}
	case TargetBridge:
		if err := t.bridge(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// bridge joins every segment's ports with a Linux bridge (STP off, bridge
// netfilter off) in the forwarder namespace.
func (t *LabTarget) bridge() error {
	return t.Lab.FW.Do(func() error {
		for _, f := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables", "bridge-nf-call-arptables"} {
			p := filepath.Join("/proc/sys/net/bridge", f)
			if err := os.WriteFile(p, []byte("0"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		for i, s := range t.Lab.Segments {
			br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: t.Lab.Name("br" + strconv.Itoa(i))}}
			if err := netlink.LinkAdd(br); err != nil {
				return fmt.Errorf("creating bridge: %w", err)
			}
			for _, p := range s.Ports {
				pl, err := netlink.LinkByName(p)
				if err != nil {
					return err
				}
				if err := netlink.LinkSetMaster(pl, br); err != nil {
					return fmt.Errorf("enslaving %s: %w", p, err)
				}
			}
			if err := netlink.LinkSetUp(br); err != nil {
				return err
			}
		}
		return nil
	})
}

// Streams is the number of streams a trial sends.
func (t *LabTarget) Streams() int { return len(t.streams) }

// rxPackets is the kernel's count of frames received on a traffic end.
func rxPackets(ns *lab.Netns, ifname string) (uint64, error) {
	l, err := ns.Link(ifname)
	if err != nil {
		return 0, err
	}
	if l.Attrs().Statistics == nil {
		return 0, fmt.Errorf("no statistics for %s", ifname)
	}
	return l.Attrs().Statistics.RxPackets, nil
}

// IndependentName names the second count.
const IndependentName = "sink rx_packets"

// drain is how long the analyzer waits for frames in flight after the
// generator stops.
const drain = 200 * time.Millisecond

// Run is one trial on every stream at once.
func (t *LabTarget) Run(ctx context.Context, spec TrialSpec) (TrialResult, error) {
	if err := ctx.Err(); err != nil {
		return TrialResult{}, err
	}
	t.trial++
	streams := make([]trialStream, len(t.streams))
	for i, s := range t.streams {
		streams[i] = trialStream{gen: s.gen, an: s.an, spec: s.spec,
			rx: func() (uint64, error) { return rxPackets(s.seg.Hosts[1], s.seg.HostIfs[1]) }}
	}
	return runTrial(ctx, t.trial, spec, streams, IndependentName)
}

// Close stops the target and removes the lab.
func (t *LabTarget) Close() error {
	var errs []error
	if t.daemon != nil {
		errs = append(errs, t.daemon.Stop())
	}
	for _, s := range t.streams {
		errs = append(errs, s.an.close())
		if s.gen != nil && s.gen.xsk != nil {
			errs = append(errs, s.gen.xsk.Close())
		}
	}
	errs = append(errs, t.Lab.Close())
	return errors.Join(errs...)
}
