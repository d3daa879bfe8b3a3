package forwarder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
)

// DefaultFlowIdle is how long a flow may be silent before it is expired.
const DefaultFlowIdle = 120 * time.Second

const topFlows = 10

// flowTable owns the BPF flow table of service mode: the programs insert
// and update entries, each CPU its own share of a flow (the kernel's LRU
// evicts when it is full), and Sweep expires idle flows and counts what is
// there. It keeps the programs' clock.
type flowTable struct {
	m, counts, clock *ebpf.Map
	size             int
	idle             time.Duration
	cpus             int
	stop             chan struct{}
	ticking          sync.WaitGroup
	// The sweep's buffers, kept between sweeps: a batch holds each key's
	// share of every possible CPU.
	keys []bpf.DatapathFlowKey
	vals []bpf.DatapathFlow

	mu    sync.Mutex
	stats forwarderapi.FlowStats
	rate  rateMeter
}

// clockTick is how often the programs' clock is set: the precision of a
// flow's first and last seen.
const clockTick = 100 * time.Millisecond

func newFlowTable(spec *ebpf.CollectionSpec, size int, idle time.Duration) (*flowTable, error) {
	if size <= 0 {
		size = 1_000_000
	}
	if idle <= 0 {
		idle = DefaultFlowIdle
	}
	m, err := newSharedMap(spec, bpf.DatapathMapFlows, uint32(size))
	if err != nil {
		return nil, err
	}
	t := &flowTable{m: m, size: size, idle: idle, cpus: ebpf.MustPossibleCPU(), stop: make(chan struct{})}
	if t.counts, err = newSharedMap(spec, bpf.DatapathMapFlowCounts, 0); err != nil {
		t.close()
		return nil, err
	}
	if t.clock, err = newSharedMap(spec, bpf.DatapathMapFlowClock, 0); err != nil {
		t.close()
		return nil, err
	}
	if err := t.setClock(); err != nil {
		t.close()
		return nil, err
	}
	t.stats = forwarderapi.FlowStats{TableSize: size, IdleTimeout: idle.String()}
	t.ticking.Add(1)
	go t.tick()
	return t, nil
}

// setClock gives the programs the time.
func (t *flowTable) setClock() error {
	if err := t.clock.Put(uint32(0), monoCoarse()); err != nil {
		return fmt.Errorf("forwarder: setting the flow table's clock: %w", err)
	}
	return nil
}

// tick keeps the programs' clock until close. A map that refuses the
// update now refuses every read too, which the sweep reports.
func (t *flowTable) tick() {
	defer t.ticking.Done()
	tk := time.NewTicker(clockTick)
	defer tk.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tk.C:
			t.setClock()
		}
	}
}

// monoCoarse is the clock bpf_ktime_get_coarse_ns reads.
func monoCoarse() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// wallClock turns a CLOCK_MONOTONIC_COARSE reading into wall time.
func wallClock(mono, now uint64, wall time.Time) time.Time {
	if mono > now {
		return wall
	}
	return wall.Add(-time.Duration(now - mono))
}

// counters sums the per-CPU insert counters.
func (t *flowTable) counters() (created, failed uint64, err error) {
	var percpu []bpf.DatapathFlowCounters
	if err := t.counts.Lookup(uint32(0), &percpu); err != nil {
		return 0, 0, fmt.Errorf("forwarder: reading flow counters: %w", err)
	}
	for _, c := range percpu {
		created += c.Created
		failed += c.InsertFailed
	}
	return created, failed, nil
}

// Sweep walks the table once: it deletes flows idle for longer than the
// idle timeout, counts the rest, keeps the largest few and works out
// evictions. It reads the insert counter first, so flows created during the
// walk can only make the eviction figure lag, never overshoot.
func (t *flowTable) Sweep() error {
	start := time.Now()
	created, failed, err := t.counters()
	if err != nil {
		return err
	}
	now := monoCoarse()
	idleNS := uint64(t.idle)
	if t.keys == nil {
		// At most about 1 MiB of values a batch, however many CPUs.
		batch := max(64, min(4096, 1<<20/(t.cpus*int(unsafe.Sizeof(bpf.DatapathFlow{})))))
		t.keys = make([]bpf.DatapathFlowKey, batch)
		t.vals = make([]bpf.DatapathFlow, batch*t.cpus) // each key's CPUs in a row
	}
	var (
		cursor ebpf.MapBatchCursor
		keys   = t.keys
		vals   = t.vals
		stale  []bpf.DatapathFlowKey
		live   int
		top    []forwarderapi.FlowEntry
	)
	for {
		n, err := t.m.BatchLookup(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			v := mergeFlow(vals[i*t.cpus : (i+1)*t.cpus])
			if now > v.LastSeen && now-v.LastSeen > idleNS {
				stale = append(stale, keys[i])
				continue
			}
			live++
			top = keepTop(top, keys[i], v, now, start)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return fmt.Errorf("forwarder: walking the flow table: %w", err)
		}
	}
	var expired int
	for len(stale) > 0 {
		chunk := stale[:min(len(stale), 4096)]
		n, err := t.m.BatchDelete(chunk, nil)
		expired += n
		if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("forwarder: expiring flows: %w", err)
		}
		stale = stale[len(chunk):]
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	s := &t.stats
	s.Expired += uint64(expired)
	s.Created = created
	s.InsertFailed = failed
	s.Flows = live
	if gone := s.Expired + uint64(live); created > gone {
		s.Evicted = created - gone
	} else {
		s.Evicted = 0
	}
	s.Top = top
	s.LastSweep = start.UTC().Format(time.RFC3339)
	s.SweepTime = time.Since(start).Round(time.Microsecond).String()
	return nil
}

// mergeFlow sums a flow's per-CPU shares: packets, bytes and flags add up,
// it was first seen when the earliest CPU saw it and last seen when the
// latest did. A CPU that never saw it has nothing to say about either.
func mergeFlow(shares []bpf.DatapathFlow) bpf.DatapathFlow {
	var v bpf.DatapathFlow
	for _, s := range shares {
		if s.Packets == 0 {
			continue
		}
		if v.Packets == 0 || s.FirstSeen < v.FirstSeen {
			v.FirstSeen = s.FirstSeen
		}
		v.LastSeen = max(v.LastSeen, s.LastSeen)
		v.Packets += s.Packets
		v.Bytes += s.Bytes
		v.TcpFlags |= s.TcpFlags
	}
	return v
}

// keepTop keeps the topFlows largest flows by bytes, largest first.
func keepTop(top []forwarderapi.FlowEntry, k bpf.DatapathFlowKey, v bpf.DatapathFlow, now uint64, wall time.Time) []forwarderapi.FlowEntry {
	if len(top) == topFlows && v.Bytes <= top[len(top)-1].Bytes {
		return top
	}
	e := forwarderapi.FlowEntry{
		Port: k.Port, Proto: k.Proto,
		SrcPort: bits.ReverseBytes16(k.Sport), DstPort: bits.ReverseBytes16(k.Dport),
		Packets: v.Packets, Bytes: v.Bytes, TCPFlags: uint8(v.TcpFlags),
		FirstSeen: wallClock(v.FirstSeen, now, wall).UTC(),
		LastSeen:  wallClock(v.LastSeen, now, wall).UTC(),
	}
	fk := flowKeyFromBPF(k)
	e.Src, e.Dst = fk.SrcAddr().String(), fk.DstAddr().String()
	top = append(top, e)
	sort.SliceStable(top, func(i, j int) bool { return top[i].Bytes > top[j].Bytes })
	if len(top) > topFlows {
		top = top[:topFlows]
	}
	return top
}

// flowKeyFromBPF converts the kernel's key, whose addresses and ports are
// in network byte order inside host-order integers.
func flowKeyFromBPF(k bpf.DatapathFlowKey) FlowKey {
	fk := FlowKey{Port: k.Port, Proto: k.Proto, Family: k.Family,
		SrcPort: bits.ReverseBytes16(k.Sport), DstPort: bits.ReverseBytes16(k.Dport)}
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint32(fk.Src[4*i:], k.Src[i])
		binary.LittleEndian.PutUint32(fk.Dst[4*i:], k.Dst[i])
	}
	return fk
}

// Stats returns the table's figures: the last sweep's, with the insert
// counters and the rate of new flows brought up to date.
func (t *flowTable) Stats() forwarderapi.FlowStats {
	created, failed, err := t.counters()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	if err == nil {
		if created > s.Created {
			s.Flows += int(created - s.Created)
			s.Flows = min(s.Flows, t.size)
		}
		s.Created = created
		s.InsertFailed = failed
		s.NewPerSecond = t.rate.update(created, time.Now())
	}
	s.Top = append([]forwarderapi.FlowEntry(nil), s.Top...)
	return s
}

func (t *flowTable) close() error {
	var errs []error
	if t.stop != nil {
		close(t.stop)
		t.ticking.Wait()
		t.stop = nil
	}
	for _, m := range []*ebpf.Map{t.m, t.counts, t.clock} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// rateMeter turns a growing counter into a per-second rate over the last
// few seconds (at least one second between samples).
type rateMeter struct {
	lastValue uint64
	lastTime  time.Time
	rate      float64
}

func (r *rateMeter) update(v uint64, now time.Time) float64 {
	if r.lastTime.IsZero() {
		r.lastValue, r.lastTime = v, now
		return 0
	}
	if dt := now.Sub(r.lastTime); dt >= time.Second {
		r.rate = float64(v-r.lastValue) / dt.Seconds()
		r.lastValue, r.lastTime = v, now
	}
	return r.rate
}
