package lldp

import (
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxPerPort bounds the neighbours kept per port. A port that hears more
// (a hub, or frames made up to fill the box) keeps those it has and
// drops the newcomer, counting it, as IEEE 802.1AB-2005 10.3.4 does
// (lldpStatsRemTablesDrops): frames forged to fill a port's table cannot
// push a real neighbour out, or renumber the table (lldpRemIndex), and
// the labels of what the box exports stay bounded.
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
	// Source is the Ethernet source address of its last frame: how the
	// datapath knows the senders the table keeps.
	Source net.HardwareAddr `json:"-"`
}

// Table is every port's neighbours, each kept until its TTL runs out
// (802.1AB's remote systems MIB). Its methods may be called from any
// goroutine.
type Table struct {
	mu    sync.Mutex
	seen  map[key]Seen
	next  map[string]int    // the next Index, by port
	drops map[string]uint64 // newcomers a full port's table dropped, by port
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

// Update takes a frame's neighbour heard on port at now, from source:
// new or refreshed, or gone when its TTL is 0. A newcomer to a full
// port is dropped and counted; Update says whether the table keeps n.
func (t *Table) Update(port string, n Neighbor, source net.HardwareAddr, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	k := key{port, n.ChassisIDSubtype, n.ChassisID, n.PortIDSubtype, n.PortID}
	if n.TTL == 0 {
		delete(t.seen, k)
		return false
	}
	s, ok := t.seen[k]
	if !ok {
		count := 0
		for other := range t.seen {
			if other.port == port {
				count++
			}
		}
		if count >= MaxPerPort {
			if t.drops == nil {
				t.drops = map[string]uint64{}
			}
			t.drops[port]++
			return false
		}
		if t.seen == nil {
			t.seen, t.next = map[key]Seen{}, map[string]int{}
		}
		t.next[port]++
		s.Index = t.next[port]
	}
	t.seen[k] = Seen{Port: port, Index: s.Index, Neighbor: n, LastSeen: now, Expires: now.Add(time.Duration(n.TTL) * time.Second),
		Source: slices.Clone(source)}
	return true
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
	for port := range t.drops {
		if gone(port) {
			delete(t.drops, port)
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

// Drops is how many newcomers port's full table dropped.
func (t *Table) Drops(port string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.drops[port]
}
