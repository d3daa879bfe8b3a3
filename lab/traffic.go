package lab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/lab/bpf"
)

// Sinks are the receiving programs on every traffic end: a frame that
// crosses a segment ends there, counted and (when capturing) copied out.
type Sinks struct {
	lab    *Lab
	spec   *ebpf.CollectionSpec
	maps   map[string]*ebpf.Map
	name   string
	byID   map[int]link.Link
	counts *ebpf.Map
	ring   *ebpf.Map
	reader *ringbuf.Reader
	progs  []*ebpf.Program
	links  []link.Link
}

// SinkID numbers a traffic end: segment*2 + side.
func SinkID(seg, side int) int { return seg*2 + side }

// AttachSinks loads a sink (capture: one that also copies frames out) on
// every traffic end of the lab.
func (l *Lab) AttachSinks(capture bool) (_ *Sinks, err error) {
	spec, err := bpf.LoadLab()
	if err != nil {
		return nil, fmt.Errorf("lab: loading BPF object: %w", err)
	}
	s := &Sinks{lab: l}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.counts, err = ebpf.NewMap(spec.Maps[bpf.LabMapSinkCounts]); err != nil {
		return nil, fmt.Errorf("lab: sink counters: %w", err)
	}
	maps := map[string]*ebpf.Map{bpf.LabMapSinkCounts: s.counts}
	name := bpf.LabProgSink
	if capture {
		if s.ring, err = ebpf.NewMap(spec.Maps[bpf.LabMapCaptured]); err != nil {
			return nil, fmt.Errorf("lab: capture ring: %w", err)
		}
		if s.reader, err = ringbuf.NewReader(s.ring); err != nil {
			return nil, fmt.Errorf("lab: capture reader: %w", err)
		}
		maps[bpf.LabMapCaptured] = s.ring
		name = bpf.LabProgCapture
	}
	s.spec, s.maps, s.name = spec, maps, name
	for i := range l.Segments {
		for side := 0; side < 2; side++ {
			if err := s.Attach(i, side); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Attach (re)attaches the sink of a traffic end.
func (s *Sinks) Attach(seg, side int) error {
	sg := s.lab.Segments[seg]
	id := SinkID(seg, side)
	if s.byID[id] != nil {
		return nil
	}
	lk, err := s.attach(sg.Hosts[side], sg.HostIfs[side], id)
	if err != nil {
		return err
	}
	if s.byID == nil {
		s.byID = map[int]link.Link{}
	}
	s.byID[id] = lk
	return nil
}

// Detach removes the sink of a traffic end: frames redirected towards it
// are then dropped by the veth, as a dead cable would drop them.
func (s *Sinks) Detach(seg, side int) error {
	id := SinkID(seg, side)
	lk := s.byID[id]
	if lk == nil {
		return nil
	}
	delete(s.byID, id)
	return lk.Close()
}

// attach loads another sink numbered id on interface ifname of ns; closing
// the returned link detaches it.
func (s *Sinks) attach(ns *Netns, ifname string, id int) (link.Link, error) {
	return s.attachAt(ns, ifname, id, s.name, false)
}

// attachAt loads program name as sink id and attaches it to ifname of ns,
// at tc ingress when tc, as the veth's XDP program otherwise.
func (s *Sinks) attachAt(ns *Netns, ifname string, id int, name string, tc bool) (link.Link, error) {
	prog, err := loadProgram(s.spec, name, s.maps, map[string]any{bpf.LabVarSinkId: uint32(id)})
	if err != nil {
		return nil, err
	}
	s.progs = append(s.progs, prog)
	l, err := ns.Link(ifname)
	if err != nil {
		return nil, err
	}
	var lk link.Link
	err = ns.Do(func() (err error) {
		if tc {
			lk, err = link.AttachTCX(link.TCXOptions{Program: prog, Interface: l.Attrs().Index, Attach: ebpf.AttachTCXIngress})
		} else {
			lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.Attrs().Index, Flags: link.XDPDriverMode})
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lab: attaching %s to %s: %w", name, ifname, err)
	}
	s.links = append(s.links, lk)
	return lk, nil
}

// SKBSink swaps the XDP sink of a traffic end for the same count at tc
// ingress, until the returned function puts the XDP sink back. Frames a
// datapath transmits as socket buffers then reach the count without the
// veth copying each into an XDP buffer first. Frames redirected by XDP are
// dropped by the veth meanwhile (no XDP program on its peer).
func (s *Sinks) SKBSink(seg, side int) (restore func() error, err error) {
	sg := s.lab.Segments[seg]
	if err := s.Detach(seg, side); err != nil {
		return nil, err
	}
	lk, err := s.attachAt(sg.Hosts[side], sg.HostIfs[side], SinkID(seg, side), bpf.LabProgSinkSkb, true)
	if err != nil {
		return nil, errors.Join(err, s.Attach(seg, side))
	}
	return func() error { return errors.Join(lk.Close(), s.Attach(seg, side)) }, nil
}

// loadProgram loads one program of spec with the given shared maps and
// constants, leaving everything else out.
func loadProgram(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map, consts map[string]any) (*ebpf.Program, error) {
	s := spec.Copy()
	s.Programs = map[string]*ebpf.ProgramSpec{name: s.Programs[name]}
	for n, ms := range s.Maps {
		if m, ok := maps[n]; ok {
			ms.MaxEntries = m.MaxEntries()
		} else if n[0] != '.' {
			delete(s.Maps, n)
		}
	}
	for n, v := range consts {
		if err := s.Variables[n].Set(v); err != nil {
			return nil, fmt.Errorf("lab: setting %s: %w", n, err)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: maps})
	if err != nil {
		return nil, fmt.Errorf("lab: loading %s: %w", name, err)
	}
	defer coll.Close()
	return coll.DetachProgram(name), nil
}

// Count returns what the sink of a traffic end received.
func (s *Sinks) Count(seg, side int) (packets, bytes uint64, err error) {
	return s.countID(SinkID(seg, side))
}

func (s *Sinks) countID(id int) (packets, bytes uint64, err error) {
	var percpu []bpf.LabSinkStats
	if err := s.counts.Lookup(uint32(id), &percpu); err != nil {
		return 0, 0, fmt.Errorf("lab: sink counters: %w", err)
	}
	for _, c := range percpu {
		packets += c.Packets
		bytes += c.Bytes
	}
	return packets, bytes, nil
}

// Frame is a captured frame and the traffic end it arrived at.
type Frame struct {
	Sink int
	Data []byte
}

// Capture reads captured frames until n have arrived or the timeout
// passes, and returns what it got.
func (s *Sinks) Capture(n int, timeout time.Duration) ([]Frame, error) {
	if s.reader == nil {
		return nil, errors.New("lab: sinks were attached without capture")
	}
	var out []Frame
	deadline := time.Now().Add(timeout)
	s.reader.SetDeadline(deadline)
	for len(out) < n {
		rec, err := s.reader.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("lab: reading captures: %w", err)
		}
		raw := rec.RawSample
		if len(raw) < 8 {
			continue
		}
		sink := binary.LittleEndian.Uint32(raw[0:])
		n := int(binary.LittleEndian.Uint32(raw[4:]))
		n = min(n, len(raw)-8)
		out = append(out, Frame{Sink: int(sink), Data: append([]byte(nil), raw[8:8+n]...)})
	}
	return out, nil
}

// Close detaches and unloads the sinks.
func (s *Sinks) Close() error {
	var errs []error
	for _, l := range s.links {
		if err := l.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, p := range s.progs {
		errs = append(errs, p.Close())
	}
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

// Sender sends frames from a traffic end with an AF_PACKET socket: exactly
// the bytes given, through the kernel's normal transmit path.
type Sender struct {
	fd      int
	ifindex int
}

// Sender opens a sender on the traffic end of segment seg, side 0 or 1.
func (l *Lab) Sender(seg, side int) (*Sender, error) {
	s := l.Segments[seg]
	snd := &Sender{fd: -1, ifindex: s.HostIndex[side]}
	err := s.Hosts[side].Do(func() (err error) {
		// Protocol 0: the socket sends only and receives nothing.
		snd.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lab: packet socket in %s: %w", s.Hosts[side].Name, err)
	}
	return snd, nil
}

// Send sends one frame.
func (s *Sender) Send(frame []byte) error {
	sa := &unix.SockaddrLinklayer{Ifindex: s.ifindex, Protocol: htons(unix.ETH_P_ALL)}
	if err := unix.Sendto(s.fd, frame, 0, sa); err != nil {
		return fmt.Errorf("lab: sending %d bytes: %w", len(frame), err)
	}
	return nil
}

// Close closes the socket.
func (s *Sender) Close() error { return unix.Close(s.fd) }

func htons(v uint16) uint16 { return v<<8 | v>>8 }
