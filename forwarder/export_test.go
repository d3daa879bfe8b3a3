package forwarder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/forwarder/xdpfilter"
	"github.com/ncpos/ncpos/pcapfilter"
)

// ProgramTester (compiled into the package for its tests only) runs the
// service-mode port program on single frames with
// BPF_PROG_RUN, attached nowhere, and reports what it counted and which flow
// it created. Tests use it to hold the kernel parser and ParseFrame to the
// same answers. It needs root.
type ProgramTester struct {
	prog    *ebpf.Program
	flows   *flowTable
	counts  *ebpf.Map
	egress  *ebpf.Map
	capture *captureMaps
	lldp    *lldpRing
	copies  chan []byte // the LLDP frames the program copied
}

// NewProgramTester loads port_service for port slot 0 of a segment of
// the default MTU with a small table.
func NewProgramTester() (*ProgramTester, error) {
	return NewProgramTesterOf(bpf.DatapathProgPortService, false, config.DefaultMTU)
}

// NewProgramTesterOf loads the port program name (port_forward or
// port_service) for port slot 0 of a segment of the given MTU, built
// without the capture hook when noCapture is set.
func NewProgramTesterOf(name string, noCapture bool, mtu int) (_ *ProgramTester, err error) {
	spec, err := datapathSpec()
	if err != nil {
		return nil, err
	}
	pt := &ProgramTester{}
	defer func() {
		if err != nil {
			pt.Close()
		}
	}()
	if pt.egress, err = newSharedMap(spec, bpf.DatapathMapEgress, 0); err != nil {
		return nil, err
	}
	if pt.counts, err = newSharedMap(spec, bpf.DatapathMapPortCounts, 0); err != nil {
		return nil, err
	}
	if pt.flows, err = newFlowTable(spec, 1024, 0); err != nil {
		return nil, err
	}
	pt.copies = make(chan []byte, 16)
	if pt.lldp, err = newLLDPRing(spec, func(ifindex int, frame []byte) []bpf.DatapathLldpSender {
		select {
		case pt.copies <- append([]byte(fmt.Sprintf("ifindex %d:", ifindex)), frame...):
		default: // the test reads no more
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if pt.capture, err = newCaptureMaps(spec); err != nil {
		return nil, err
	}
	pt.prog, err = loadPortProgram(spec, name, 0, mtu, pt.capture.add(pt.lldp.add(map[string]*ebpf.Map{
		bpf.DatapathMapEgress: pt.egress, bpf.DatapathMapPortCounts: pt.counts,
		bpf.DatapathMapFlows: pt.flows.m, bpf.DatapathMapFlowCounts: pt.flows.counts, bpf.DatapathMapFlowClock: pt.flows.clock,
	})), noCapture)
	return pt, err
}

// Run runs the program once on frame (at least 14 bytes) and returns the
// malformation bits it counted and the flow it created, if any.
func (pt *ProgramTester) Run(frame []byte) (Parsed, error) {
	var p Parsed
	// Empty the flow table, so that the frame's flow is the only one.
	var k bpf.DatapathFlowKey
	var v []bpf.DatapathFlow // per CPU
	for it := pt.flows.m.Iterate(); it.Next(&k, &v); {
		if err := pt.flows.m.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return p, err
		}
	}
	before, err := readPortCounts(pt.counts, []*port{{}})
	if err != nil {
		return p, err
	}
	if _, err := pt.prog.Run(&ebpf.RunOptions{Data: frame}); err != nil {
		return p, fmt.Errorf("running port_service: %w", err)
	}
	after, err := readPortCounts(pt.counts, []*port{{}})
	if err != nil {
		return p, err
	}
	for i := range after[0].Reasons {
		if after[0].Reasons[i] != before[0].Reasons[i] {
			p.Malformed |= 1 << i
		}
	}
	n := 0
	for it := pt.flows.m.Iterate(); it.Next(&k, &v); n++ {
		p.HasKey = true
		p.Key = flowKeyFromBPF(k)
		p.Key.Port = 0
		p.TCPFlags = uint8(mergeFlow(v).TcpFlags)
	}
	if n > 1 {
		return p, fmt.Errorf("one frame made %d flows", n)
	}
	return p, nil
}

// Counted is what the program has counted in so far: frames and bytes.
func (pt *ProgramTester) Counted() (frames, bytes uint64, err error) {
	c, err := readPortCounts(pt.counts, []*port{{}})
	if err != nil {
		return 0, 0, err
	}
	return c[0].RxPackets, c[0].RxBytes, nil
}

// KnowLLDPSender marks the sender of mac on interface ifindex as one the
// neighbour table keeps, as forwarderd does.
func (pt *ProgramTester) KnowLLDPSender(ifindex int, mac [6]byte) error {
	return pt.lldp.known.Update(&bpf.DatapathLldpSender{Ifindex: uint32(ifindex), Mac: mac}, uint64(0), ebpf.UpdateAny)
}

// Copied is the next LLDP frame the program copied for forwarderd,
// prefixed with "ifindex N:", or nil when none comes within a second.
func (pt *ProgramTester) Copied() []byte {
	select {
	case c := <-pt.copies:
		return c
	case <-time.After(time.Second):
		return nil
	}
}

// Close releases the program and maps.
func (pt *ProgramTester) Close() error {
	var errs []error
	if pt.prog != nil {
		errs = append(errs, pt.prog.Close())
	}
	if pt.flows != nil {
		errs = append(errs, pt.flows.close())
	}
	errs = append(errs, pt.lldp.close())
	errs = append(errs, pt.capture.close())
	for _, m := range []*ebpf.Map{pt.counts, pt.egress} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// StartCapture hooks a capture that runs filter into the tester's
// program, as StartCapture does into a port's.
func (pt *ProgramTester) StartCapture(filter string, snaplen int) (*Capture, error) {
	prog, err := pcapfilter.Compile(filter)
	if err != nil {
		return nil, err
	}
	fn, err := xdpfilter.Function(captureFilter, prog)
	if err != nil {
		return nil, err
	}
	if snaplen == 0 {
		snaplen = forwarderapi.CaptureMaxSnaplen
	}
	c := &Capture{Request: forwarderapi.CaptureRequest{Snaplen: snaplen}}
	if err := c.hook(pt.capture, []int{0}, fn); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Cost runs the program on frame n times in one go and returns the
// kernel's time per run.
func (pt *ProgramTester) Cost(frame []byte, n int) (time.Duration, error) {
	_, d, err := pt.prog.Benchmark(frame, n, nil)
	return d, err
}

// RunRepeat runs the program on frame n times in one go.
func (pt *ProgramTester) RunRepeat(frame []byte, n int) error {
	_, err := pt.prog.Run(&ebpf.RunOptions{Data: frame, Repeat: uint32(n)})
	return err
}

// CapturedFrame is a frame as a capture's ring hands it over.
type CapturedFrame struct {
	Ifindex, Len, Act, Drop, Malformed uint32
	Data                               []byte
}

// NextFrame waits up to wait for the capture's next frame; nil when none
// came.
func (c *Capture) NextFrame(wait time.Duration) (*CapturedFrame, error) {
	rec, err := c.next(context.Background(), wait)
	if rec == nil || err != nil {
		return nil, err
	}
	h := rec.hdr
	return &CapturedFrame{Ifindex: h.Ifindex, Len: h.Len, Act: h.Act, Drop: h.Drop, Malformed: h.Malformed, Data: bytes.Clone(rec.data)}, nil
}

// AsPort makes the tester's capture one of port label on interface 1
// (lo, where BPF_PROG_RUN runs its frames), of segment seg with peer, so
// that Stream can write it.
func (c *Capture) AsPort(label, seg, peer string, seconds, frames int) {
	c.port = &port{label: label, ifname: "lo", ifindex: 1, segment: &Segment{Name: seg}, peer: &port{label: peer}}
	c.port.peer.peer = c.port
	c.Request.Port, c.Request.Direction, c.Request.Seconds, c.Request.Frames = label, forwarderapi.CaptureIn, seconds, frames
	c.Started = time.Now()
	c.alive = func() bool { return true }
}
