package lab_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/lldpdtest"
)

// TestLLDPNeighbours runs Debian's lldpd as the neighbour on each side
// of a segment: each port shows its own side's system name within an
// LLDP interval, each lldpd still hears the other through the segment
// (the box forwards LLDP and sends none of its own), and a neighbour
// goes from its port once its lldpd stops.
func TestLLDPNeighbours(t *testing.T) {
	l := newLab(t, 1, 1)
	d := startForwarderd(t, l)
	seg := l.Segments[0]
	var lldpds [2]*lldpdtest.Lldpd
	for side, name := range []string{"neighbour-a", "neighbour-b"} {
		lldpds[side] = lldpdtest.Start(t, seg.Hosts[side].Name, seg.HostIfs[side], name)
	}
	start := time.Now()
	for side, name := range []string{"neighbour-a", "neighbour-b"} {
		waitPort(t, d, seg.Ports[side], name+" as its neighbour", func(p forwarderapi.PortStatus) bool {
			return len(p.Neighbors) == 1 && p.Neighbors[0].SystemName == name && p.Neighbors[0].TTL > 0 && p.LLDPRejected == 0
		})
	}
	t.Logf("both ports show their neighbour %v after lldpd started", time.Since(start).Round(time.Millisecond))

	// Each lldpd hears the other across the segment, and nothing else:
	// the box is not a hop.
	lldpds[0].Hears(t, "neighbour-b", 10*time.Second)
	lldpds[1].Hears(t, "neighbour-a", 10*time.Second)

	// Stopped, neighbour-a leaves its port at once (lldpd says so as it
	// stops); neighbour-b stays.
	lldpds[0].Stop(syscall.SIGTERM)
	stopped := time.Now()
	waitPort(t, d, seg.Ports[0], "no neighbour once lldpd stopped", func(p forwarderapi.PortStatus) bool { return len(p.Neighbors) == 0 })
	t.Logf("neighbour-a gone from its port %v after its lldpd stopped", time.Since(stopped).Round(time.Millisecond))
	var ttl time.Duration
	waitPort(t, d, seg.Ports[1], "neighbour-b still", func(p forwarderapi.PortStatus) bool {
		if len(p.Neighbors) == 1 && p.Neighbors[0].SystemName == "neighbour-b" {
			ttl = time.Duration(p.Neighbors[0].TTL) * time.Second
			return true
		}
		return false
	})
	// Killed, neighbour-b says nothing: it ages out when its TTL runs out.
	lldpds[1].Stop(syscall.SIGKILL)
	killed := time.Now()
	time.Sleep(ttl / 2)
	waitPort(t, d, seg.Ports[1], "neighbour-b until half its TTL", func(p forwarderapi.PortStatus) bool { return len(p.Neighbors) == 1 })
	waitPort(t, d, seg.Ports[1], "no neighbour once its TTL ran out", func(p forwarderapi.PortStatus) bool { return len(p.Neighbors) == 0 })
	if took := time.Since(killed); took > ttl+2*time.Second {
		t.Errorf("neighbour-b aged out %v after its lldpd was killed, its TTL is %v", took, ttl)
	}
	t.Logf("neighbour-b aged out %v after its lldpd was killed (TTL %v)", time.Since(killed).Round(time.Millisecond), ttl)
}
