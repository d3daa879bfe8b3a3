package lab

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/bench/xdptraffic/sink"
)

// Sinks are the bench's counting sinks (bench/xdptraffic/sink) on every
// traffic end: a frame that crosses a segment ends there, counted and
// (when capturing) copied out.
type Sinks struct {
	xs   *sink.Sinks
	lab  *Lab
	byID map[int]link.Link
	// links are every link attached, the traffic ends' and the others
	// (tc sinks, sinks on forwarder ports), for Close.
	links []link.Link
}

// SinkID numbers a traffic end: segment*2 + side.
func SinkID(seg, side int) int { return seg*2 + side }

// AttachSinks loads a sink (capture: one that also copies frames out) on
// every traffic end of the lab.
func (l *Lab) AttachSinks(capture bool) (_ *Sinks, err error) {
	xs, err := sink.New(capture)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	s := &Sinks{xs: xs, lab: l, byID: map[int]link.Link{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
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
	id := SinkID(seg, side)
	if s.byID[id] != nil {
		return nil
	}
	lk, err := s.attach(seg, side, sink.HookXDP)
	if err != nil {
		return err
	}
	s.byID[id] = lk
	return nil
}

// attach attaches the sink of a traffic end at hook.
func (s *Sinks) attach(seg, side int, hook sink.Hook) (link.Link, error) {
	sg := s.lab.Segments[seg]
	lk, err := s.xs.Attach(SinkID(seg, side), sg.HostIndex[side], hook, sg.Hosts[side].Do)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", sg.HostIfs[side], err)
	}
	s.links = append(s.links, lk)
	return lk, nil
}

// attachPort attaches a sink counting as id to port ifname of ns, which
// need not be a traffic end (the ceiling's drop is on a forwarder port).
func (s *Sinks) attachPort(ns *Netns, ifname string, id int) (link.Link, error) {
	l, err := ns.Link(ifname)
	if err != nil {
		return nil, err
	}
	lk, err := s.xs.Attach(id, l.Attrs().Index, sink.HookXDP, ns.Do)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", ifname, err)
	}
	s.links = append(s.links, lk)
	return lk, nil
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

// SKBSink swaps the XDP sink of a traffic end for the same count at tc
// ingress, until the returned function puts the XDP sink back. Frames a
// datapath transmits as socket buffers then reach the count without the
// veth copying each into an XDP buffer first. Frames redirected by XDP are
// dropped by the veth meanwhile (no XDP program on its peer).
func (s *Sinks) SKBSink(seg, side int) (restore func() error, err error) {
	if err := s.Detach(seg, side); err != nil {
		return nil, err
	}
	lk, err := s.attach(seg, side, sink.HookTC)
	if err != nil {
		return nil, errors.Join(err, s.Attach(seg, side))
	}
	return func() error { return errors.Join(lk.Close(), s.Attach(seg, side)) }, nil
}

// SlowSink makes a traffic end a consumer that falls behind: its NAPI
// (where its sink runs) moves to a kernel thread on cpu, an ordinary
// process there, which takes turns with whatever else runs on it. Flooded
// from that cpu, the veth's 256-frame ring fills while the thread waits
// for its turn, and the veth refuses frames at transmit, as a NIC's full
// transmit ring does. The returned function puts the NAPI back.
func (s *Sinks) SlowSink(seg, side, cpu int) (restore func() error, err error) {
	sg := s.lab.Segments[seg]
	if err := threadedNAPI(sg.Hosts[side], sg.HostIfs[side], true); err != nil {
		return nil, err
	}
	pinNAPIThreads("napi/"+sg.HostIfs[side], cpu, false)
	return func() error { return threadedNAPI(sg.Hosts[side], sg.HostIfs[side], false) }, nil
}

// Count returns what the sink of a traffic end received.
func (s *Sinks) Count(seg, side int) (packets, bytes uint64, err error) {
	return s.xs.Count(SinkID(seg, side))
}

// Capture reads captured frames until n have arrived or the timeout
// passes, and returns what it got.
func (s *Sinks) Capture(n int, timeout time.Duration) ([]sink.Frame, error) {
	return s.xs.Capture(n, timeout)
}

// Close detaches and unloads the sinks.
func (s *Sinks) Close() error {
	var errs []error
	for _, l := range s.links {
		if err := l.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.links, s.byID = nil, nil
	return errors.Join(append(errs, s.xs.Close())...)
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
