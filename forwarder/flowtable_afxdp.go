package forwarder

import (
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"sort"
	"sync"
	"time"
)

// goFlowTable is service mode's flow table for the afxdp engine: the same
// figures as the BPF table, kept in Go. It can be split into shards, each
// with its share of the capacity, should lock contention between workers
// ever show; the engine uses a single shard, which every worker locks once
// per batch, so that one busy segment can use the whole table as in BPF.
type goFlowTable struct {
	size   int
	idle   time.Duration
	shards []*flowShard
	start  time.Time

	mu    sync.Mutex
	stats forwarderapi.FlowStats
	rate  rateMeter
}

// flowShard is an LRU of flows: a map to slots of a fixed array, the slots
// chained most recently used first.
type flowShard struct {
	mu         sync.Mutex
	index      map[FlowKey]int32
	slots      []flowSlot
	head, tail int32 // most and least recently used; -1 when empty
	free       []int32
	created    uint64
	evicted    uint64
	expired    uint64
}

type flowSlot struct {
	key         FlowKey
	packets     uint64
	bytes       uint64
	first, last time.Duration // since the table's start
	tcpFlags    uint8
	prev, next  int32
}

func newGoFlowTable(size, shards int, idle time.Duration) *goFlowTable {
	if idle <= 0 {
		idle = DefaultFlowIdle
	}
	shards = max(shards, 1)
	t := &goFlowTable{size: size, idle: idle, start: time.Now()}
	t.stats = forwarderapi.FlowStats{TableSize: size, IdleTimeout: idle.String()}
	per := max(size/shards, 1)
	for i := 0; i < shards; i++ {
		s := &flowShard{index: make(map[FlowKey]int32, per), slots: make([]flowSlot, per), head: -1, tail: -1}
		s.free = make([]int32, per)
		for j := range s.free {
			s.free[j] = int32(per - 1 - j)
		}
		t.shards = append(t.shards, s)
	}
	return t
}

// now is the table's clock for a batch of frames.
func (t *goFlowTable) now() time.Duration { return time.Since(t.start) }

// track counts one frame of flow k, inserting the flow (evicting the least
// recently used when the shard is full). The caller holds s.mu.
func (s *flowShard) track(k FlowKey, n uint64, flags uint8, now time.Duration) {
	if i, ok := s.index[k]; ok {
		e := &s.slots[i]
		e.packets++
		e.bytes += n
		e.last = now
		e.tcpFlags |= flags
		s.moveToFront(i)
		return
	}
	var i int32
	if len(s.free) > 0 {
		i = s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
	} else {
		i = s.tail
		s.unlink(i)
		delete(s.index, s.slots[i].key)
		s.evicted++
	}
	s.slots[i] = flowSlot{key: k, packets: 1, bytes: n, first: now, last: now, tcpFlags: flags, prev: -1, next: -1}
	s.index[k] = i
	s.pushFront(i)
	s.created++
}

func (s *flowShard) unlink(i int32) {
	e := &s.slots[i]
	if e.prev >= 0 {
		s.slots[e.prev].next = e.next
	} else {
		s.head = e.next
	}
	if e.next >= 0 {
		s.slots[e.next].prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (s *flowShard) pushFront(i int32) {
	e := &s.slots[i]
	e.prev, e.next = -1, s.head
	if s.head >= 0 {
		s.slots[s.head].prev = i
	}
	s.head = i
	if s.tail < 0 {
		s.tail = i
	}
}

func (s *flowShard) moveToFront(i int32) {
	if s.head == i {
		return
	}
	s.unlink(i)
	s.pushFront(i)
}

// Sweep expires idle flows (from the LRU end, where they are) and
// refreshes the figures.
func (t *goFlowTable) Sweep() error {
	start := time.Now()
	now := t.now()
	var live int
	var created, evicted, expired uint64
	var top []forwarderapi.FlowEntry
	for _, s := range t.shards {
		s.mu.Lock()
		for s.tail >= 0 && now-s.slots[s.tail].last > t.idle {
			i := s.tail
			s.unlink(i)
			delete(s.index, s.slots[i].key)
			s.free = append(s.free, i)
			s.expired++
		}
		live += len(s.index)
		created += s.created
		evicted += s.evicted
		expired += s.expired
		for i := s.head; i >= 0; i = s.slots[i].next {
			e := &s.slots[i]
			if len(top) == topFlows && e.bytes <= top[len(top)-1].Bytes {
				continue
			}
			top = append(top, t.entry(e))
			sort.SliceStable(top, func(a, b int) bool { return top[a].Bytes > top[b].Bytes })
			top = top[:min(len(top), topFlows)]
		}
		s.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &t.stats
	st.Flows, st.Created, st.Evicted, st.Expired, st.Top = live, created, evicted, expired, top
	st.LastSweep = start.UTC().Format(time.RFC3339)
	st.SweepTime = time.Since(start).Round(time.Microsecond).String()
	return nil
}

func (t *goFlowTable) entry(e *flowSlot) forwarderapi.FlowEntry {
	return forwarderapi.FlowEntry{
		Port: e.key.Port, Proto: e.key.Proto,
		Src: e.key.SrcAddr().String(), Dst: e.key.DstAddr().String(),
		SrcPort: e.key.SrcPort, DstPort: e.key.DstPort,
		Packets: e.packets, Bytes: e.bytes, TCPFlags: e.tcpFlags,
		FirstSeen: t.start.Add(e.first).UTC(), LastSeen: t.start.Add(e.last).UTC(),
	}
}

// Stats returns the last sweep's figures with the counters brought up to
// date.
func (t *goFlowTable) Stats() forwarderapi.FlowStats {
	var live int
	var created, evicted uint64
	for _, s := range t.shards {
		s.mu.Lock()
		live += len(s.index)
		created += s.created
		evicted += s.evicted
		s.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stats
	st.Flows, st.Created, st.Evicted = live, created, evicted
	st.NewPerSecond = t.rate.update(created, time.Now())
	st.Top = append([]forwarderapi.FlowEntry(nil), st.Top...)
	return st
}
