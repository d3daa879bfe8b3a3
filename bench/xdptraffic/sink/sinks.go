package sink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
)

// maxSinks is how many sink ids one Sinks counts under.
const maxSinks = 64

// Sinks count the frames that reach the ports they are attached to, each
// port under a sink id of its own, and drop them; capturing sinks also
// copy every frame out. Unlike the analyzer they need no stamp, so they
// count any traffic: the lab's, a bridge's, a capture's.
type Sinks struct {
	spec   *ebpf.CollectionSpec
	prog   string // SinkProgSink or SinkProgCapture
	counts *ebpf.Map
	ring   *ebpf.Map // nil without capture
	reader *ringbuf.Reader
}

// Hook is where a sink counts: as the port's XDP program, or at tc
// ingress for frames a datapath transmits as socket buffers (a Linux
// bridge, AF_XDP in copy mode), which then skip the copy into an XDP
// buffer that a veth makes for an XDP program, a cost of the harness that
// a NIC does not have.
type Hook int

// The hooks a sink attaches at.
const (
	HookXDP Hook = iota
	HookTC
)

// New loads the sinks' maps; capture makes the XDP sinks copy every
// frame out for Capture.
func New(capture bool) (_ *Sinks, err error) {
	spec, err := LoadSink()
	if err != nil {
		return nil, fmt.Errorf("sinks: %w", err)
	}
	s := &Sinks{spec: spec, prog: SinkProgSink}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.counts, err = ebpf.NewMap(spec.Maps[SinkMapSinkCounts]); err != nil {
		return nil, fmt.Errorf("sinks: counters: %w", err)
	}
	if capture {
		if s.ring, err = ebpf.NewMap(spec.Maps[SinkMapCaptured]); err != nil {
			return nil, fmt.Errorf("sinks: capture ring: %w", err)
		}
		if s.reader, err = ringbuf.NewReader(s.ring); err != nil {
			return nil, fmt.Errorf("sinks: capture reader: %w", err)
		}
		s.prog = SinkProgCapture
	}
	return s, nil
}

// Attach loads a sink that counts as id and attaches it to port ifindex
// at hook; do runs a function in the port's network namespace (nil: this
// one). Closing the link detaches the sink.
func (s *Sinks) Attach(id, ifindex int, hook Hook, do func(func() error) error) (link.Link, error) {
	if id < 0 || id >= maxSinks {
		return nil, fmt.Errorf("sinks: id %d, want 0 to %d", id, maxSinks-1)
	}
	name := s.prog
	if hook == HookTC {
		name = SinkProgSinkSkb
	}
	prog, err := s.load(name, uint32(id))
	if err != nil {
		return nil, err
	}
	// The link holds the program in the kernel from here on.
	defer prog.Close()
	if do == nil {
		do = func(fn func() error) error { return fn() }
	}
	var lk link.Link
	err = do(func() (err error) {
		if hook == HookTC {
			lk, err = link.AttachTCX(link.TCXOptions{Program: prog, Interface: ifindex, Attach: ebpf.AttachTCXIngress})
		} else {
			lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sinks: attaching %s to port %d: %w", name, ifindex, err)
	}
	return lk, nil
}

// load loads program name numbered id, sharing the sinks' maps.
func (s *Sinks) load(name string, id uint32) (*ebpf.Program, error) {
	spec := s.spec.Copy()
	spec.Programs = map[string]*ebpf.ProgramSpec{name: spec.Programs[name]}
	maps := map[string]*ebpf.Map{SinkMapSinkCounts: s.counts}
	if s.ring != nil {
		maps[SinkMapCaptured] = s.ring
	} else {
		delete(spec.Maps, SinkMapCaptured)
	}
	if err := spec.Variables[SinkVarSinkId].Set(id); err != nil {
		return nil, fmt.Errorf("sinks: %w", err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: maps})
	if err != nil {
		return nil, fmt.Errorf("sinks: loading %s: %w", name, err)
	}
	defer coll.Close()
	return coll.DetachProgram(name), nil
}

// Count returns what sink id counted so far.
func (s *Sinks) Count(id int) (packets, bytes uint64, err error) {
	var percpu []SinkSinkStats
	if err := s.counts.Lookup(uint32(id), &percpu); err != nil {
		return 0, 0, fmt.Errorf("sinks: counters of %d: %w", id, err)
	}
	for _, c := range percpu {
		packets += c.Packets
		bytes += c.Bytes
	}
	return packets, bytes, nil
}

// Frame is a captured frame and the sink it arrived at.
type Frame struct {
	Sink int
	Data []byte
}

// Capture reads captured frames until n have arrived or the timeout
// passes, and returns what it got.
func (s *Sinks) Capture(n int, timeout time.Duration) ([]Frame, error) {
	if s.reader == nil {
		return nil, errors.New("sinks: loaded without capture")
	}
	var out []Frame
	s.reader.SetDeadline(time.Now().Add(timeout))
	for len(out) < n {
		rec, err := s.reader.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("sinks: reading captures: %w", err)
		}
		raw := rec.RawSample
		if len(raw) < 8 {
			continue
		}
		sink := binary.LittleEndian.Uint32(raw[0:])
		size := min(int(binary.LittleEndian.Uint32(raw[4:])), len(raw)-8)
		out = append(out, Frame{Sink: int(sink), Data: append([]byte(nil), raw[8:8+size]...)})
	}
	return out, nil
}

// Close unloads the sinks' maps; sinks still attached count on until
// their links are closed.
func (s *Sinks) Close() error {
	var errs []error
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	for _, m := range []*ebpf.Map{s.ring, s.counts} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
