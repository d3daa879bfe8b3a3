package forwarder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/forwarder/xdpfilter"
	"github.com/ncpos/ncpos/pcapfilter"
)

// Capture rate caps: what a capture keeps at most per second, over which
// frames are counted and left out. They keep a capture of a busy port
// from taking the CPU the segments forward with.
const (
	CaptureMaxFramesPerSecond = 50_000
	captureMaxBytesPerSecond  = 64 << 20
	captureRingSize           = 8 << 20 // about a tenth of a second at the caps
)

// captureFilter is the function of port_capture whose body is the
// capture's filter.
const captureFilter = "capture_filter"

// captureMaps are the maps through which every port program of an engine
// hands frames to a capture: which slots are captured, the capture's
// program for each, and the verdict the port program passes on.
type captureMaps struct {
	capturing, progs, verdicts *ebpf.Map

	// mu orders a slot's changes with the engine's close: after it, the
	// maps are closed and nothing calls a capture any more.
	mu     sync.Mutex
	closed bool
}

func newCaptureMaps(spec *ebpf.CollectionSpec) (_ *captureMaps, err error) {
	m := &captureMaps{}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	if m.capturing, err = newSharedMap(spec, bpf.DatapathMapCapturing, 0); err != nil {
		return nil, err
	}
	if m.progs, err = newSharedMap(spec, bpf.DatapathMapCaptureProgs, 0); err != nil {
		return nil, err
	}
	if m.verdicts, err = newSharedMap(spec, bpf.DatapathMapCaptureVerdicts, 0); err != nil {
		return nil, err
	}
	return m, nil
}

// add puts the maps among those a port program is loaded with.
func (m *captureMaps) add(maps map[string]*ebpf.Map) map[string]*ebpf.Map {
	maps[bpf.DatapathMapCapturing] = m.capturing
	maps[bpf.DatapathMapCaptureProgs] = m.progs
	maps[bpf.DatapathMapCaptureVerdicts] = m.verdicts
	return maps
}

// set has the port program in slot hand its frames to prog.
func (m *captureMaps) set(slot int, prog *ebpf.Program) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("forwarder: the datapath has stopped")
	}
	if err := m.progs.Put(uint32(slot), prog); err != nil {
		return fmt.Errorf("forwarder: hooking the capture into port slot %d: %w", slot, err)
	}
	if err := m.capturing.Put(uint32(slot), uint32(1)); err != nil {
		return fmt.Errorf("forwarder: starting the capture in port slot %d: %w", slot, err)
	}
	return nil
}

// clear has the port program in slot hand frames to no capture: when the
// capture ends, and when the slot's port is detached, so that a port the
// slot goes to next never feeds a capture of another.
func (m *captureMaps) clear(slot int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	var errs []error
	if err := m.capturing.Put(uint32(slot), uint32(0)); err != nil {
		errs = append(errs, fmt.Errorf("forwarder: stopping the capture in port slot %d: %w", slot, err))
	}
	if err := m.progs.Delete(uint32(slot)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		errs = append(errs, fmt.Errorf("forwarder: unhooking the capture from port slot %d: %w", slot, err))
	}
	return errors.Join(errs...)
}

func (m *captureMaps) close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	var errs []error
	for _, x := range []*ebpf.Map{m.capturing, m.progs, m.verdicts} {
		if x != nil {
			errs = append(errs, x.Close())
		}
	}
	return errors.Join(errs...)
}

// Capture is a running capture of one port. Frames come from its ring
// until Close.
type Capture struct {
	Request forwarderapi.CaptureRequest
	Started time.Time

	port   *port
	afxdp  bool    // frames redirected go to an AF_XDP socket, not the peer
	hooked []*port // the ports whose programs end in the capture's
	// alive says whether the hooked ports are still the engine's: a
	// segment attached anew or an engine restarted ends the capture.
	alive   func() bool
	engine  *captureMaps
	slots   []int     // where it set capturing
	counts  *ebpf.Map // per CPU
	window  *ebpf.Map // the rate cap's second
	scratch *ebpf.Map
	ring    *ebpf.Map
	reader  *ringbuf.Reader
	rec     ringbuf.Record // the frame read last
	prog    *ebpf.Program
	release func() // frees the ports for another capture

	closeOnce sync.Once
}

// captures are the ports being captured, by slot, so that each has at
// most one capture.
type captures struct {
	mu     sync.Mutex
	bySlot map[int]*Capture
}

func refuse(kind forwarderapi.CaptureErrorKind, format string, a ...any) error {
	return &forwarderapi.CaptureError{Kind: kind, Message: fmt.Sprintf(format, a...)}
}

// StartCapture checks r, compiles its filter and starts capturing at the
// XDP hook of the ports r asks for. A refusal is a
// *forwarderapi.CaptureError; nothing is left running after one.
func (f *Forwarder) StartCapture(r forwarderapi.CaptureRequest) (_ *Capture, err error) {
	prog, err := pcapfilter.Compile(r.Filter)
	if err != nil {
		return nil, refuse(forwarderapi.CaptureBadFilter, "%v", err)
	}
	filter, err := xdpfilter.Function(captureFilter, prog)
	if err != nil {
		return nil, refuse(forwarderapi.CaptureBadFilter, "filter %q: %v", r.Filter, err)
	}

	f.mu.Lock()
	var p *port
	var labels []string
	for _, q := range f.ports {
		labels = append(labels, q.label)
		if q.label == r.Port {
			p = q
		}
	}
	eng, afxdp, noHook := f.eng, f.opts.Engine == EngineAFXDP, f.opts.NoCapture
	f.mu.Unlock()
	if noHook {
		return nil, refuse(forwarderapi.CaptureUnavailable, "this forwarderd runs without the capture hook (-no-capture)")
	}
	if p == nil {
		return nil, refuse(forwarderapi.CaptureUnknownPort, "port %q is not a segment port of this box (segment ports: %s)", r.Port, strings.Join(labels, ", "))
	}
	var hooked []*port
	switch r.Direction {
	case forwarderapi.CaptureIn:
		hooked = []*port{p}
	case forwarderapi.CaptureOut:
		hooked = []*port{p.peer}
	default:
		hooked = []*port{p, p.peer}
	}

	c := &Capture{Request: r, Started: time.Now(), port: p, afxdp: afxdp, hooked: hooked}
	if err := f.captures.claim(c); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	// Each hooked port as it is now: the capture lasts while the same
	// port is attached in the same slot of the same engine.
	type attached struct {
		slot, ifindex int
		label         string
		gen           uint64
	}
	var cm *captureMaps
	var was []attached
	for _, q := range hooked {
		var gen uint64
		if cm, gen = eng.hook(q); cm == nil {
			return nil, refuse(forwarderapi.CaptureUnavailable, "port %s is not attached to the datapath", q.label)
		}
		was = append(was, attached{q.slot, q.ifindex, q.label, gen})
	}
	c.alive = func() bool {
		f.mu.Lock()
		now, ports := f.eng, f.ports
		f.mu.Unlock()
		if now != eng {
			return false
		}
		for _, a := range was {
			i := slices.IndexFunc(ports, func(q *port) bool { return q.slot == a.slot && q.ifindex == a.ifindex && q.label == a.label })
			if i < 0 {
				return false
			}
			if m, gen := eng.hook(ports[i]); m == nil || gen != a.gen {
				return false
			}
		}
		return true
	}
	slots := make([]int, len(hooked))
	for i, q := range hooked {
		slots[i] = q.slot
	}
	if err := c.hook(cm, slots, filter); err != nil {
		return nil, err
	}
	return c, nil
}

// hook makes the capture's maps and program, with filter as its
// capture_filter, and has the port programs in slots end in it.
func (c *Capture) hook(cm *captureMaps, slots []int, filter asm.Instructions) (err error) {
	spec, err := datapathSpec()
	if err != nil {
		return err
	}
	if c.counts, err = newSharedMap(spec, bpf.DatapathMapCaptureCounts, 0); err != nil {
		return err
	}
	if c.scratch, err = newSharedMap(spec, bpf.DatapathMapCaptureScratch, 0); err != nil {
		return err
	}
	if c.window, err = newSharedMap(spec, bpf.DatapathMapCaptureWindows, 0); err != nil {
		return err
	}
	if c.ring, err = newSharedMap(spec, bpf.DatapathMapCaptureRing, captureRingSize); err != nil {
		return err
	}
	if c.reader, err = ringbuf.NewReader(c.ring); err != nil {
		return fmt.Errorf("forwarder: reading the capture ring: %w", err)
	}
	c.prog, err = loadCaptureProgram(spec, filter, uint32(c.Request.Snaplen), map[string]*ebpf.Map{
		bpf.DatapathMapCaptureCounts: c.counts, bpf.DatapathMapCaptureWindows: c.window, bpf.DatapathMapCaptureScratch: c.scratch,
		bpf.DatapathMapCaptureRing: c.ring, bpf.DatapathMapCaptureVerdicts: cm.verdicts,
	})
	var verr *ebpf.VerifierError
	if errors.As(err, &verr) {
		// The rest of the program is the same for every capture: what
		// the kernel refuses is the filter's part.
		return refuse(forwarderapi.CaptureBadFilter, "filter %q: the kernel refuses its program: %v", c.Request.Filter, err)
	}
	if err != nil {
		return err
	}
	c.engine = cm
	for _, slot := range slots {
		c.slots = append(c.slots, slot)
		if err := cm.set(slot, c.prog); err != nil {
			return err
		}
	}
	return nil
}

// claim makes c the capture of its ports, or says which capture has one.
func (cs *captures) claim(c *Capture) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, q := range c.hooked {
		if o := cs.bySlot[q.slot]; o != nil {
			return refuse(forwarderapi.CaptureBusy, "a capture of %s (%s, since %s) already runs at port %s's hook: one capture per port",
				o.Request.Port, o.Request.Direction, o.Started.UTC().Format(time.RFC3339), q.label)
		}
	}
	if cs.bySlot == nil {
		cs.bySlot = map[int]*Capture{}
	}
	for _, q := range c.hooked {
		cs.bySlot[q.slot] = c
	}
	c.release = func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		for _, q := range c.hooked {
			if cs.bySlot[q.slot] == c {
				delete(cs.bySlot, q.slot)
			}
		}
	}
	return nil
}

// loadCaptureProgram loads port_capture with filter as its
// capture_filter.
func loadCaptureProgram(spec *ebpf.CollectionSpec, filter asm.Instructions, snaplen uint32, maps map[string]*ebpf.Map) (*ebpf.Program, error) {
	return loadProgramWith(spec, bpf.DatapathProgPortCapture, maps, func(s *ebpf.CollectionSpec) error {
		ps := s.Programs[bpf.DatapathProgPortCapture]
		insns, err := replaceFunction(ps.Instructions, captureFilter, filter)
		if err != nil {
			return err
		}
		ps.Instructions = insns
		for name, v := range map[string]any{
			bpf.DatapathVarCaptureSnaplen:   snaplen,
			bpf.DatapathVarCaptureMaxFrames: uint64(CaptureMaxFramesPerSecond),
			bpf.DatapathVarCaptureMaxBytes:  uint64(captureMaxBytesPerSecond),
		} {
			if err := s.Variables[name].Set(v); err != nil {
				return fmt.Errorf("forwarder: setting %s: %w", name, err)
			}
		}
		return nil
	})
}

// replaceFunction returns insns with the body of the function called name
// (from its symbol to the next one) replaced by fn, which starts with the
// same symbol; the original's first instruction's metadata (its BTF
// function and line) stays, as the kernel wants one for every function.
func replaceFunction(insns asm.Instructions, name string, fn asm.Instructions) (asm.Instructions, error) {
	start := -1
	for i, ins := range insns {
		if ins.Symbol() == name {
			start = i
			break
		}
	}
	if start < 0 || len(fn) == 0 {
		return nil, fmt.Errorf("forwarder: no function %s to replace", name)
	}
	end := len(insns)
	for i := start + 1; i < len(insns); i++ {
		if insns[i].Symbol() != "" {
			end = i
			break
		}
	}
	out := make(asm.Instructions, 0, len(insns)-(end-start)+len(fn))
	out = append(out, insns[:start]...)
	first := fn[0].WithMetadata(insns[start].Metadata)
	out = append(out, first)
	out = append(out, fn[1:]...)
	out = append(out, insns[end:]...)
	return out, nil
}

// CaptureCounts are a capture's counters, from the kernel.
type CaptureCounts struct {
	Seen     uint64 // frames the hooked ports saw while it ran
	Matched  uint64 // kept by the filter
	OverRate uint64 // matched, left out by the rate cap
	RingFull uint64 // matched, lost because the reader fell behind
	Captured uint64 // handed to the reader
}

// Counts reads the capture's counters, summed over the CPUs.
func (c *Capture) Counts() (CaptureCounts, error) {
	var percpu []bpf.DatapathCaptureState
	if err := c.counts.Lookup(uint32(0), &percpu); err != nil {
		return CaptureCounts{}, fmt.Errorf("forwarder: reading the capture's counters: %w", err)
	}
	var n CaptureCounts
	for _, s := range percpu {
		n.Seen += s.Seen
		n.Matched += s.Matched
		n.OverRate += s.OverRate
		n.RingFull += s.RingFull
		n.Captured += s.Captured
	}
	return n, nil
}

// Close stops the capture: the ports no longer hand it frames, and are
// free for another capture.
func (c *Capture) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		for _, slot := range c.slots {
			errs = append(errs, c.engine.clear(slot))
		}
		if c.prog != nil {
			errs = append(errs, c.prog.Close())
		}
		if c.reader != nil {
			errs = append(errs, c.reader.Close())
		}
		for _, m := range []*ebpf.Map{c.ring, c.counts, c.window, c.scratch} {
			if m != nil {
				errs = append(errs, m.Close())
			}
		}
		if c.release != nil {
			c.release()
		}
	})
	return errors.Join(errs...)
}

// captured is one frame from the ring.
type captured struct {
	hdr  bpf.DatapathCaptureHdr
	data []byte
}

// next waits up to wait for the next frame; nil, nil when none came.
func (c *Capture) next(ctx context.Context, wait time.Duration) (*captured, error) {
	c.reader.SetDeadline(time.Now().Add(wait))
	// Into the same buffer each time: the frame is written out before
	// the next is read.
	err := c.reader.ReadInto(&c.rec)
	if errors.Is(err, errDeadline) {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("forwarder: reading the capture ring: %w", err)
	}
	return decodeCaptured(c.rec.RawSample)
}
