package bypasslab

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/lab"
)

// Test frames are the self-test's (package bench), 64 bytes from side a
// to side b of a segment, so the receiver knows exactly which frames
// crossed: a 48-bit sequence number whose high 16 bits go in the stamp's
// trial and its low 32 in the stamp's sequence.
var seqFrames = func() *bench.Builder {
	b, err := bench.NewBuilder(bench.FrameSpec{Size: 64, SrcMAC: frames.MACA, DstMAC: frames.MACB})
	if err != nil {
		panic(err)
	}
	return b
}()

// SeqFrame is test frame number seq (below 2^48).
func SeqFrame(seq uint64) []byte {
	return seqFrames.Write(make([]byte, seqFrames.Len()), uint16(seq>>32), uint32(seq), 0)
}

// parseSeq returns the sequence number of a test frame.
func parseSeq(f []byte) (uint64, bool) {
	st, err := bench.ParseStamp(f)
	if err != nil {
		return 0, false
	}
	return uint64(st.Trial)<<32 | uint64(st.Seq), true
}

// Arrival is a test frame received on the far side, with the kernel's
// receive timestamp.
type Arrival struct {
	Seq uint64
	At  time.Time
}

// Receiver takes test frames off a traffic end with an AF_PACKET socket.
// The end must accept frames redirected by XDP without a program of its
// own (lab.Hostify turns GRO on for that).
type Receiver struct {
	fd   int
	mu   sync.Mutex
	got  []Arrival
	stop chan struct{}
	done chan error
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// NewReceiver starts receiving on side of segment seg.
func NewReceiver(l *lab.Lab, seg, side int) (*Receiver, error) {
	s := l.Segments[seg]
	r := &Receiver{fd: -1, stop: make(chan struct{}), done: make(chan error, 1)}
	err := s.Hosts[side].Do(func() (err error) {
		r.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bypasslab: packet socket: %w", err)
	}
	setup := func() error {
		if err := unix.Bind(r.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: s.HostIndex[side]}); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(r.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(r.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
			return err
		}
		tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
		return unix.SetsockoptTimeval(r.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	if err := setup(); err != nil {
		unix.Close(r.fd)
		return nil, fmt.Errorf("bypasslab: packet socket: %w", err)
	}
	go r.loop()
	return r, nil
}

func (r *Receiver) loop() {
	buf := make([]byte, 2048)
	oob := make([]byte, 128)
	for {
		select {
		case <-r.stop:
			r.done <- nil
			return
		default:
		}
		n, oobn, _, from, err := unix.Recvmsg(r.fd, buf, oob, 0)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			r.done <- err
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		seq, ok := parseSeq(buf[:n])
		if !ok {
			continue
		}
		at := time.Now()
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
					sec := int64(binary.NativeEndian.Uint64(m.Data[0:]))
					nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
					if sec > 0 {
						at = time.Unix(sec, nsec)
					}
				}
			}
		}
		r.mu.Lock()
		r.got = append(r.got, Arrival{Seq: seq, At: at})
		r.mu.Unlock()
	}
}

// Arrivals returns what arrived so far, in arrival order.
func (r *Receiver) Arrivals() []Arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Arrival(nil), r.got...)
}

// Count is the number of test frames received.
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// Reset forgets what arrived.
func (r *Receiver) Reset() {
	r.mu.Lock()
	r.got = nil
	r.mu.Unlock()
}

// Close stops receiving.
func (r *Receiver) Close() error {
	close(r.stop)
	err := <-r.done
	unix.Close(r.fd)
	return err
}

// Stream sends numbered test frames at a fixed interval until stopped.
type Stream struct {
	snd      *lab.Sender
	interval time.Duration
	mu       sync.Mutex
	sent     []time.Time // send time of frame seq (index)
	base     uint64
	stop     chan struct{}
	done     chan error
}

// StartStream sends from side 0 of segment seg every interval, numbering
// frames from base.
func StartStream(l *lab.Lab, seg int, interval time.Duration, base uint64) (*Stream, error) {
	snd, err := l.Sender(seg, 0)
	if err != nil {
		return nil, err
	}
	s := &Stream{snd: snd, interval: interval, base: base, stop: make(chan struct{}), done: make(chan error, 1)}
	go s.loop()
	return s, nil
}

func (s *Stream) loop() {
	start := time.Now()
	for i := uint64(0); ; i++ {
		if d := time.Until(start.Add(time.Duration(i) * s.interval)); d > 0 {
			select {
			case <-s.stop:
				s.done <- nil
				return
			case <-time.After(d):
			}
		} else {
			select {
			case <-s.stop:
				s.done <- nil
				return
			default:
			}
		}
		at := time.Now()
		if err := s.snd.Send(SeqFrame(s.base + i)); err != nil {
			s.done <- err
			return
		}
		s.mu.Lock()
		s.sent = append(s.sent, at)
		s.mu.Unlock()
	}
}

// Sent returns the send times so far; frame base+i was sent at [i].
func (s *Stream) Sent() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.sent...)
}

// Stop stops sending.
func (s *Stream) Stop() error {
	close(s.stop)
	err := <-s.done
	s.snd.Close()
	return err
}

// Send sends n test frames numbered from base, back to back.
func Send(l *lab.Lab, seg int, base uint64, n int) error {
	snd, err := l.Sender(seg, 0)
	if err != nil {
		return err
	}
	defer snd.Close()
	for i := 0; i < n; i++ {
		if err := snd.Send(SeqFrame(base + uint64(i))); err != nil {
			return err
		}
	}
	return nil
}

// Outage is what happened to a stream of test frames around an event
// (forwarderd killed) at time at.
type Outage struct {
	// Gap runs from the event to the first frame received that went
	// through the relay: the first arrival at or after the relay carried
	// its first frame (the relay notes that time in the kernel).
	Gap     time.Duration
	Resumed bool      // such a frame arrived
	FirstAt time.Time // when
	// RelayAfter is when the relay carried its first frame, after the
	// event (a few microseconds before that frame arrived).
	RelayAfter time.Duration
	// Silence is the longest stretch without arrivals after the event
	// (for information: under CPU contention the sender's own stalls show
	// here too).
	Silence time.Duration
	Sent    int
	Lost    int
}

// ClockSkew is how far receive timestamps and the relay's clock, read
// separately, may disagree: a frame that arrived up to ClockSkew before
// the relay's time of its first frame is that frame.
const ClockSkew = 100 * time.Microsecond

// Analyse works out the outage around at from the frames sent (numbered
// from base), the arrivals, and relayAt, when the relay first carried a
// frame (zero if it did not).
func Analyse(at, relayAt time.Time, base uint64, sent []time.Time, got []Arrival) Outage {
	o := Outage{Sent: len(sent)}
	seen := map[uint64]bool{}
	var arr []Arrival
	for _, a := range got {
		if a.Seq >= base && a.Seq < base+uint64(len(sent)) && !seen[a.Seq] {
			seen[a.Seq] = true
			arr = append(arr, a)
		}
	}
	o.Lost = len(sent) - len(seen)
	sort.Slice(arr, func(i, j int) bool { return arr[i].At.Before(arr[j].At) })
	prev := at
	for _, a := range arr {
		if a.At.Before(at) {
			prev = a.At
			continue
		}
		o.Silence = max(o.Silence, a.At.Sub(prev))
		prev = a.At
	}
	if relayAt.IsZero() {
		return o
	}
	o.RelayAfter = relayAt.Sub(at)
	for _, a := range arr {
		if !a.At.Before(relayAt.Add(-ClockSkew)) {
			o.FirstAt, o.Resumed, o.Gap = a.At, true, a.At.Sub(at)
			break
		}
	}
	return o
}
