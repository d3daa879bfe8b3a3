package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"

	"github.com/asavie/xdp"
	"github.com/cilium/ebpf/link"
	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/vishvananda/netlink"
)

// Namespace is a network namespace a stream's end sits in (the lab's);
// the appliance's test ports are in the current one.
type Namespace interface {
	Do(fn func() error) error
	Link(name string) (netlink.Link, error)
}

// PortEnd is one end of a stream: an interface, in the current network
// namespace or in NS.
type PortEnd struct {
	Ifname string
	NS     Namespace // nil: the current namespace (the appliance)
}

// Source and destination MACs of test frames on ends without a hardware
// address of their own (locally administered).
var (
	defaultSrcMAC = []byte{0x02, 0x6e, 0x63, 0x70, 0x00, 0x0a}
	defaultDstMAC = []byte{0x02, 0x6e, 0x63, 0x70, 0x00, 0x0b}
)

// PortStream is one direction through the device under test: the
// generator on Sender, the analyzer on Receiver (on the appliance, the
// test ports cabled to a segment's two ports).
type PortStream struct {
	Name             string // the segment measured
	Sender, Receiver PortEnd
	// Reversed: the frames go from the second address range to the
	// first (FrameSpec.Reversed), as the other direction's do.
	Reversed bool
}

// Reverse is the same path the other way.
func (ps PortStream) Reverse() PortStream {
	ps.Sender, ps.Receiver = ps.Receiver, ps.Sender
	ps.Reversed = !ps.Reversed
	return ps
}

// Label names the stream by segment and interfaces ("seg1 eth3→eth4").
func (ps PortStream) Label() string {
	return ps.Name + " " + ps.Sender.Ifname + "→" + ps.Receiver.Ifname
}

// PortTarget is the Trial of the appliance's self-test: AF_XDP generators
// and analyzers on plain interfaces, every trial checked against the
// receiving interface's kernel counter as the lab does.
type PortTarget struct {
	streams []*portStream
	trial   uint16
	probed  bool
}

type portStream struct {
	PortStream
	rxIndex int
	txIndex int
	gen     streamGenerator
	an      streamAnalyzer
	spec    FrameSpec
	// Engine carries the stream (EngineKernel or EngineAFXDP); Why
	// says why not the kernel's live frames, when not.
	Engine, Why string
}

// do runs fn in the end's namespace.
func (e PortEnd) do(fn func() error) error {
	if e.NS == nil {
		return fn()
	}
	return e.NS.Do(fn)
}

func (e PortEnd) link() (netlink.Link, error) {
	if e.NS == nil {
		return netlink.LinkByName(e.Ifname)
	}
	return e.NS.Link(e.Ifname)
}

// NewPorts opens the generators and analyzers of streams (flows per
// stream; 1 when 0), bringing the interfaces up. Close releases them.
// An interface may send one stream and receive another (both directions
// of a segment at once), but receive only one.
func NewPorts(streams []PortStream, flows int) (_ *PortTarget, err error) {
	if len(streams) == 0 {
		return nil, errors.New("no streams: no segment has both ports cabled to test ports")
	}
	sends, receives := map[PortEnd]bool{}, map[PortEnd]bool{}
	for _, ps := range streams {
		if ps.Sender == ps.Receiver {
			return nil, fmt.Errorf("stream %s: sends and receives on the same port", ps.Label())
		}
		if sends[ps.Sender] || receives[ps.Receiver] {
			return nil, fmt.Errorf("stream %s: %s already sends or %s already receives another stream", ps.Label(), ps.Sender.Ifname, ps.Receiver.Ifname)
		}
		sends[ps.Sender], receives[ps.Receiver] = true, true
	}
	t := &PortTarget{}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	for i, ps := range streams {
		s := &portStream{PortStream: ps}
		var ends [2]netlink.Link
		for k, e := range []PortEnd{ps.Sender, ps.Receiver} {
			l, err := e.link()
			if err != nil {
				return nil, fmt.Errorf("test port %s: %w", e.Ifname, err)
			}
			if err := e.do(func() error { return netlink.LinkSetUp(l) }); err != nil {
				return nil, fmt.Errorf("bringing %s up: %w", e.Ifname, err)
			}
			ends[k] = l
		}
		s.spec = FrameSpec{Flows: max(flows, 1), Stream: uint16(i), Reversed: ps.Reversed}
		copy(s.spec.SrcMAC[:], macOr(ends[0].Attrs().HardwareAddr, defaultSrcMAC))
		copy(s.spec.DstMAC[:], macOr(ends[1].Attrs().HardwareAddr, defaultDstMAC))
		s.rxIndex, s.txIndex = ends[1].Attrs().Index, ends[0].Attrs().Index
		t.streams = append(t.streams, s)
		err := newKernelStream(s)
		if err == nil {
			continue
		}
		s.Why = err.Error()
		// An AF_XDP analyzer's socket takes the port's queue, which a
		// generator's socket on the same port then cannot bind.
		if sends[ps.Receiver] {
			return nil, fmt.Errorf("stream %s: the kernel's generator and analyzer are needed to send and receive on %s at once: %w", ps.Label(), ps.Receiver.Ifname, err)
		}
		if err := newAFXDPStream(s); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// newAFXDPStream opens AF_XDP sockets for s, where the kernel's live
// frames cannot go.
func newAFXDPStream(s *portStream) error {
	// Analyzer first, as in the lab.
	an, err := newPortAnalyzer(s.Receiver, s.rxIndex, s.spec.Stream)
	if err != nil {
		return fmt.Errorf("analyzer on %s: %w", s.Receiver.Ifname, err)
	}
	an.start()
	s.an = an
	if err := newAFXDPGenerator(s); err != nil {
		return err
	}
	s.Engine = EngineAFXDP
	return nil
}

// newAFXDPGenerator opens the AF_XDP socket that sends s: xdptraffic's
// generator, asked to send from its socket.
func newAFXDPGenerator(s *portStream) error {
	gen, err := xdptraffic.NewGenerator(xdptraffic.GeneratorOptions{Ifindex: s.txIndex, Flows: s.spec.Flows, Do: s.Sender.do,
		CPU: int(s.spec.Stream) % runtime.NumCPU(), Socket: true})
	if err != nil {
		return fmt.Errorf("generator on %s: %w", s.Sender.Ifname, err)
	}
	s.gen = &trafficGenerator{g: gen, tx: s.txPackets}
	return nil
}

func macOr(hw net.HardwareAddr, def []byte) []byte {
	if len(hw) == 6 {
		return hw
	}
	return def
}

// newPortAnalyzer binds the analyzer's AF_XDP socket to an interface and
// attaches its redirect program through a BPF link (not asavie's netlink
// attach, so that the program goes with the process): native XDP when the
// driver has it (veth in the lab), generic XDP otherwise.
func newPortAnalyzer(e PortEnd, ifindex int, stream uint16) (a *analyzer, err error) {
	a = &analyzer{tally: tally{stream: stream}}
	err = e.do(func() error {
		if a.xsk, err = newXSK(ifindex, &analyzerOptions); err != nil {
			return err
		}
		if a.prog, err = xdp.NewProgram(1); err != nil {
			return err
		}
		if err = a.prog.Register(0, a.xsk.FD()); err != nil {
			return err
		}
		a.lk, err = link.AttachXDP(link.XDPOptions{Program: a.prog.Program, Interface: ifindex, Flags: link.XDPDriverMode})
		if err != nil {
			a.lk, err = link.AttachXDP(link.XDPOptions{Program: a.prog.Program, Interface: ifindex, Flags: link.XDPGenericMode})
		}
		return err
	})
	if err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// Streams is the number of streams a trial sends.
func (t *PortTarget) Streams() int { return len(t.streams) }

func (s *portStream) rxPackets() (uint64, error) {
	l, err := s.Receiver.link()
	if err != nil {
		return 0, err
	}
	if l.Attrs().Statistics == nil {
		return 0, fmt.Errorf("no statistics for %s", s.Receiver.Ifname)
	}
	return l.Attrs().Statistics.RxPackets, nil
}

func (s *portStream) txPackets() (uint64, error) {
	l, err := s.Sender.link()
	if err != nil {
		return 0, err
	}
	if l.Attrs().Statistics == nil {
		return 0, fmt.Errorf("no statistics for %s", s.Sender.Ifname)
	}
	return l.Attrs().Statistics.TxPackets, nil
}

// Engines says what carries each stream, and why not the kernel's live
// frames where it is not ("seg1 eth5→eth6: AF_XDP generator, kernel
// analyzer (eth5's driver sent 0 of 16 XDP frames)").
func (t *PortTarget) Engines() []string {
	var out []string
	for _, s := range t.streams {
		e := s.Label() + ": " + s.Engine
		if s.Why != "" {
			e += " (" + s.Why + ")"
		}
		out = append(out, e)
	}
	return out
}

// Run is one trial on every stream at once.
func (t *PortTarget) Run(ctx context.Context, spec TrialSpec) (TrialResult, error) {
	if err := ctx.Err(); err != nil {
		return TrialResult{}, err
	}
	if !t.probed {
		// Only now is the device under test up: a veth, for one,
		// drops XDP frames unless its peer runs an XDP program.
		for _, s := range t.streams {
			if err := s.probe(); err != nil {
				return TrialResult{}, err
			}
		}
		t.probed = true
	}
	t.trial++
	streams := make([]trialStream, len(t.streams))
	for i, s := range t.streams {
		streams[i] = trialStream{gen: s.gen, an: s.an, spec: s.spec, rx: s.rxPackets}
	}
	return runTrial(ctx, t.trial, spec, streams, IndependentName)
}

// IndependentName names the second count of every trial.
const IndependentName = "receiver rx_packets"

// Close releases the sockets and detaches the analyzers' programs.
func (t *PortTarget) Close() error {
	var errs []error
	for _, s := range t.streams {
		if s.an != nil {
			errs = append(errs, s.an.close())
		}
		if s.gen != nil {
			errs = append(errs, s.gen.close())
		}
	}
	t.streams = nil
	return errors.Join(errs...)
}
