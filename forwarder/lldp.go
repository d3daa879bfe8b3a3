package forwarder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/lldp"
)

// lldpRing is port.c's ring of LLDP frames (lldp_frames), which every
// port program shares, and the goroutine that hands each frame on.
type lldpRing struct {
	m    *ebpf.Map
	r    *ringbuf.Reader
	done chan struct{}
}

// newLLDPRing makes the ring and reads it until close: take gets the port
// slot a frame entered and the frame (its first bytes when it is long).
func newLLDPRing(spec *ebpf.CollectionSpec, take func(slot int, frame []byte)) (*lldpRing, error) {
	if take == nil {
		take = func(int, []byte) {}
	}
	m, err := newSharedMap(spec, bpf.DatapathMapLldpFrames, 0)
	if err != nil {
		return nil, err
	}
	r, err := ringbuf.NewReader(m)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("forwarder: reading the LLDP ring: %w", err)
	}
	l := &lldpRing{m: m, r: r, done: make(chan struct{})}
	go l.read(take)
	return l, nil
}

func (l *lldpRing) read(take func(int, []byte)) {
	defer close(l.done)
	for {
		rec, err := l.r.Read()
		if errors.Is(err, ringbuf.ErrClosed) {
			return
		}
		if err != nil || len(rec.RawSample) < 8 {
			continue
		}
		// struct lldp_copy: port, length, then the frame's first bytes.
		slot := binary.LittleEndian.Uint32(rec.RawSample[0:4])
		n := min(int(binary.LittleEndian.Uint32(rec.RawSample[4:8])), len(rec.RawSample)-8)
		take(int(slot), rec.RawSample[8:8+n])
	}
}

// close stops the reader and frees the ring; nil is a ring never made.
func (l *lldpRing) close() error {
	if l == nil {
		return nil
	}
	err := l.r.Close()
	<-l.done
	return errors.Join(err, l.m.Close())
}

// neighbors is what the box learns from the LLDP frames its ports
// receive, by port label: it outlives the engines, which hand it frames
// by port slot.
type neighbors struct {
	table  lldp.Table
	labels atomic.Pointer[map[int]string] // slot -> label

	mu       sync.Mutex
	rejected map[string]uint64 // frames that do not decode, by label
	lastErr  map[string]string
}

// setPorts names the slots' ports.
func (n *neighbors) setPorts(ports []*port) {
	m := map[int]string{}
	for _, p := range ports {
		m[p.slot] = p.label
	}
	n.labels.Store(&m)
}

// take reads one LLDP frame that entered slot.
func (n *neighbors) take(slot int, frame []byte) {
	labels := n.labels.Load()
	if labels == nil {
		return
	}
	label, ok := (*labels)[slot]
	if !ok {
		return // a port detached meanwhile
	}
	nb, err := lldp.Decode(frame)
	if err != nil {
		n.mu.Lock()
		if n.rejected == nil {
			n.rejected, n.lastErr = map[string]uint64{}, map[string]string{}
		}
		n.rejected[label]++
		n.lastErr[label] = err.Error()
		n.mu.Unlock()
		return
	}
	n.table.Update(label, nb, time.Now())
}

// of is what port label has learnt: its neighbours, the frames it could
// not read and why the last was not.
func (n *neighbors) of(label string, all []lldp.Seen) (seen []lldp.Seen, rejected uint64, why string) {
	for _, s := range all {
		if s.Port == label {
			seen = append(seen, s)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return seen, n.rejected[label], n.lastErr[label]
}
