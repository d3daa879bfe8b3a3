package forwarder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
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

// lldpRing is port.c's ring of LLDP frames (lldp_frames) and its map of
// the senders the neighbour table keeps (lldp_known), which every port
// program shares, and the goroutine that hands each frame on and keeps
// the map as the table says.
type lldpRing struct {
	m, known *ebpf.Map
	r        *ringbuf.Reader
	done     chan struct{}
}

// lldpTake reads one LLDP frame that entered interface ifindex (its
// first bytes when long), and returns every sender the neighbour table
// keeps after it.
type lldpTake func(ifindex int, frame []byte) []bpf.DatapathLldpSender

// newLLDPRing makes the ring and reads it until close.
func newLLDPRing(spec *ebpf.CollectionSpec, take lldpTake) (_ *lldpRing, err error) {
	if take == nil {
		take = func(int, []byte) []bpf.DatapathLldpSender { return nil }
	}
	l := &lldpRing{done: make(chan struct{})}
	defer func() {
		if err != nil {
			l.closeMaps()
		}
	}()
	if l.m, err = newSharedMap(spec, bpf.DatapathMapLldpFrames, 0); err != nil {
		return nil, err
	}
	if l.known, err = newSharedMap(spec, bpf.DatapathMapLldpKnown, 0); err != nil {
		return nil, err
	}
	if l.r, err = ringbuf.NewReader(l.m); err != nil {
		return nil, fmt.Errorf("forwarder: reading the LLDP ring: %w", err)
	}
	go l.read(take)
	return l, nil
}

// add puts the ring's maps among a port program's maps.
func (l *lldpRing) add(maps map[string]*ebpf.Map) map[string]*ebpf.Map {
	maps[bpf.DatapathMapLldpFrames] = l.m
	maps[bpf.DatapathMapLldpKnown] = l.known
	return maps
}

func (l *lldpRing) read(take lldpTake) {
	defer close(l.done)
	written := map[bpf.DatapathLldpSender]bool{}
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
		l.keep(written, take(int(ifindex), rec.RawSample[8:8+n]))
	}
}

// keep makes lldp_known hold the senders kept, of which written are in
// it now. A sender that cannot be written is copied within its port's
// budget, as any other; it is tried again with the next frame.
func (l *lldpRing) keep(written map[bpf.DatapathLldpSender]bool, kept []bpf.DatapathLldpSender) {
	want := map[bpf.DatapathLldpSender]bool{}
	for _, s := range kept {
		want[s] = true
		if !written[s] {
			if l.known.Update(&s, uint64(0), ebpf.UpdateAny) == nil {
				written[s] = true
			}
		}
	}
	for s := range written {
		if !want[s] {
			if err := l.known.Delete(&s); err == nil || errors.Is(err, ebpf.ErrKeyNotExist) {
				delete(written, s)
			}
		}
	}
}

// close stops the reader and frees the ring; nil is a ring never made.
func (l *lldpRing) close() error {
	if l == nil {
		return nil
	}
	err := l.r.Close()
	<-l.done
	return errors.Join(err, l.closeMaps())
}

func (l *lldpRing) closeMaps() error {
	var errs []error
	for _, m := range []*ebpf.Map{l.m, l.known} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
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

// take reads one LLDP frame that entered interface ifindex, and returns
// the senders of every neighbour the table keeps (lldpTake).
func (n *neighbors) take(ifindex int, frame []byte) []bpf.DatapathLldpSender {
	labels := n.labels.Load()
	if labels == nil {
		return nil
	}
	now := time.Now()
	if label, ok := (*labels)[ifindex]; ok { // else not a port, or not yet one
		if nb, err := lldp.Decode(frame); err != nil || len(frame) < 12 {
			if err == nil {
				err = fmt.Errorf("a frame of %d bytes", len(frame))
			}
			n.mu.Lock()
			if n.rejected == nil {
				n.rejected, n.lastErr = map[string]uint64{}, map[string]string{}
			}
			n.rejected[label]++
			n.lastErr[label] = err.Error()
			n.mu.Unlock()
		} else {
			n.table.Update(label, nb, net.HardwareAddr(frame[6:12]), now)
		}
	}
	ifindexes := map[string]int{}
	for ifindex, label := range *labels {
		ifindexes[label] = ifindex
	}
	var kept []bpf.DatapathLldpSender
	for _, s := range n.table.Neighbors(now) {
		ifindex, ok := ifindexes[s.Port]
		if !ok || len(s.Source) != 6 {
			continue
		}
		who := bpf.DatapathLldpSender{Ifindex: uint32(ifindex)}
		copy(who.Mac[:], s.Source)
		kept = append(kept, who)
	}
	return kept
}

// of is what port label has learnt: its neighbours, the frames it could
// not read and why the last was not, and the newcomers its full table
// dropped.
func (n *neighbors) of(label string, all []lldp.Seen) (seen []lldp.Seen, rejected uint64, why string, dropped uint64) {
	for _, s := range all {
		if s.Port == label {
			seen = append(seen, s)
		}
	}
	dropped = n.table.Drops(label)
	n.mu.Lock()
	defer n.mu.Unlock()
	return seen, n.rejected[label], n.lastErr[label], dropped
}
