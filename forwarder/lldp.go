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

// lldpCopyMax is port.c's LLDP_MAX: the most of a frame a copy holds
// (a record is longer, padded to 8 bytes).
const lldpCopyMax = 1518

// lldpRing is port.c's ring of LLDP frames (lldp_frames), which every
// port program shares, and the goroutine that hands each frame on.
type lldpRing struct {
	m    *ebpf.Map
	r    *ringbuf.Reader
	done chan struct{}
}

// newLLDPRing makes the ring and reads it until close: take gets the
// interface a frame entered and the frame (its first bytes when long).
func newLLDPRing(spec *ebpf.CollectionSpec, take func(ifindex int, frame []byte)) (*lldpRing, error) {
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
		// struct lldp_copy: ifindex, length, then the frame's first bytes.
		ifindex := binary.LittleEndian.Uint32(rec.RawSample[0:4])
		n := min(int(binary.LittleEndian.Uint32(rec.RawSample[4:8])), lldpCopyMax, len(rec.RawSample)-8)
		take(int(ifindex), rec.RawSample[8:8+n])
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
// by the interface they entered. Frames are matched to ports by
// interface, not by BPF slot, so that a slot a change hands to another
// segment never files one port's neighbour under another.
type neighbors struct {
	table  lldp.Table
	labels atomic.Pointer[map[int]string] // ifindex -> label

	mu       sync.Mutex
	rejected map[string]uint64 // frames that do not decode, by label
	lastErr  map[string]string
}

// setPorts names the ports' interfaces, and forgets what a port that is
// gone, or now on another interface, heard.
func (n *neighbors) setPorts(ports []*port) {
	m := map[int]string{}
	for _, p := range ports {
		m[p.ifindex] = p.label
	}
	old := n.labels.Swap(&m)
	stale := map[string]bool{}
	if old != nil {
		for ifindex, label := range *old {
			if m[ifindex] != label {
				stale[label] = true
			}
		}
	}
	for _, label := range m {
		delete(stale, label)
	}
	if len(stale) == 0 {
		return
	}
	n.table.Forget(func(port string) bool { return stale[port] })
	n.mu.Lock()
	for label := range stale {
		delete(n.rejected, label)
		delete(n.lastErr, label)
	}
	n.mu.Unlock()
}

// take reads one LLDP frame that entered interface ifindex.
func (n *neighbors) take(ifindex int, frame []byte) {
	labels := n.labels.Load()
	if labels == nil {
		return
	}
	label, ok := (*labels)[ifindex]
	if !ok {
		return // not a port, or not yet one
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
