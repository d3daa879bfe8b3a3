package lldp

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxPerPort bounds the neighbours kept per port: a port that hears more
// (a hub, or frames made up to fill the box) makes room by dropping the
// one that would expire first, and counts it, as 802.1AB's
// lldpStatsRemTablesDrops does.
const MaxPerPort = 16

// Seen is a neighbour as last heard on a port.
type Seen struct {
	Port string `json:"port"`
	// Index numbers the port's neighbours in the order they came, and
	// stays while the neighbour does (LLDP-MIB's lldpRemIndex).
	Index int `json:"index"`
	Neighbor
	LastSeen time.Time `json:"last_seen"`
	Expires  time.Time `json:"expires"` // LastSeen + TTL: aged out after
}

// Table is every port's neighbours, each kept until its TTL runs out
// (802.1AB's remote systems MIB). Its methods may be called from any
// goroutine.
type Table struct {
	mu    sync.Mutex
	seen  map[key]Seen
	next  map[string]int // the next Index, by port
	drops uint64
}

// key is a neighbour on a port: its chassis and port IDs with their
// subtypes (the MSAP identifier, 802.1AB 8.5.2 and 8.5.3).
type key struct {
	port           string
	chassisSubtype int
	chassis        string
	portSubtype    int
	portID         string
}

// Update takes a frame's neighbour heard on port at now: new or
// refreshed, or gone when its TTL is 0.
func (t *Table) Update(port string, n Neighbor, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	k := key{port, n.ChassisIDSubtype, n.ChassisID, n.PortIDSubtype, n.PortID}
	if n.TTL == 0 {
		delete(t.seen, k)
		return
	}
	s, ok := t.seen[k]
	if !ok {
		var first key
		count := 0
		for other, o := range t.seen {
			if other.port == port {
				if count == 0 || o.Expires.Before(t.seen[first].Expires) {
					first = other
				}
				count++
			}
		}
		if count >= MaxPerPort {
			delete(t.seen, first)
			t.drops++
		}
		if t.seen == nil {
			t.seen, t.next = map[key]Seen{}, map[string]int{}
		}
		t.next[port]++
		s.Index = t.next[port]
	}
	t.seen[k] = Seen{Port: port, Index: s.Index, Neighbor: n, LastSeen: now, Expires: now.Add(time.Duration(n.TTL) * time.Second)}
}

// Forget drops every neighbour of the ports gone says are gone.
func (t *Table) Forget(gone func(port string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.seen {
		if gone(k.port) {
			delete(t.seen, k)
		}
	}
	for port := range t.next {
		if gone(port) {
			delete(t.next, port)
		}
	}
}

// expire drops the neighbours whose TTL ran out before now (t.mu held).
func (t *Table) expire(now time.Time) {
	for k, s := range t.seen {
		if !now.Before(s.Expires) {
			delete(t.seen, k)
		}
	}
}

// Neighbors lists the neighbours still valid at now, by port, then
// index.
func (t *Table) Neighbors(now time.Time) []Seen {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	out := make([]Seen, 0, len(t.seen))
	for _, s := range t.seen {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Seen) int {
		if c := strings.Compare(a.Port, b.Port); c != 0 {
			return c
		}
		return a.Index - b.Index
	})
	return out
}

// Drops is how many neighbours a full port's table dropped to make room.
func (t *Table) Drops() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.drops
}
