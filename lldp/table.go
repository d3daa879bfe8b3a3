package lldp

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxPerPort bounds the neighbours kept per port: a port that hears more
// (a hub, or frames made up to fill the box) drops the newcomers and
// counts them, as 802.1AB's lldpStatsRemTablesDrops does.
const MaxPerPort = 16

// Seen is a neighbour as last heard on a port.
type Seen struct {
	Port string `json:"port"`
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
	drops uint64
}

// key is a neighbour on a port: its chassis and port IDs (the MSAP
// identifier, 802.1AB 8.5.2 and 8.5.3).
type key struct{ port, chassis, portID string }

// Update takes a frame's neighbour heard on port at now: new or
// refreshed, or gone when its TTL is 0. It reports whether the table
// kept it (false: the port's table was full).
func (t *Table) Update(port string, n Neighbor, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	k := key{port, n.ChassisID, n.PortID}
	if n.TTL == 0 {
		delete(t.seen, k)
		return true
	}
	if _, ok := t.seen[k]; !ok {
		count := 0
		for other := range t.seen {
			if other.port == port {
				count++
			}
		}
		if count >= MaxPerPort {
			t.drops++
			return false
		}
	}
	if t.seen == nil {
		t.seen = map[key]Seen{}
	}
	t.seen[k] = Seen{Port: port, Neighbor: n, LastSeen: now, Expires: now.Add(time.Duration(n.TTL) * time.Second)}
	return true
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
// chassis ID and port ID.
func (t *Table) Neighbors(now time.Time) []Seen {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	out := make([]Seen, 0, len(t.seen))
	for _, s := range t.seen {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Seen) int {
		return strings.Compare(a.Port+"\x00"+a.ChassisID+"\x00"+a.PortID, b.Port+"\x00"+b.ChassisID+"\x00"+b.PortID)
	})
	return out
}

// Drops is how many neighbours a full port's table did not keep.
func (t *Table) Drops() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.drops
}
