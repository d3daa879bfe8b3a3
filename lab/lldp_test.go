package lab_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/lldpdtest"
	"github.com/ncpos/ncpos/lldp"
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

// TestLLDPFloodKeepsNeighbour floods a port with LLDP frames made up to
// fill its neighbour table, beside a real neighbour (lldpd, one frame a
// second, a TTL of a few seconds): first from one sender that makes up a
// new identity each frame, then from a new sender each frame. The real
// neighbour stays on the port with its index throughout, refreshed
// within its TTL, the table stays within its bound, and the newcomers it
// dropped are counted.
func TestLLDPFloodKeepsNeighbour(t *testing.T) {
	l := newLab(t, 1, 1)
	d := startForwarderd(t, l)
	seg := l.Segments[0]
	lldpdtest.Start(t, seg.Hosts[0].Name, seg.HostIfs[0], "neighbour-a")
	var index int
	waitPort(t, d, seg.Ports[0], "neighbour-a as its neighbour", func(p forwarderapi.PortStatus) bool {
		if len(p.Neighbors) == 1 && p.Neighbors[0].SystemName == "neighbour-a" {
			index = p.Neighbors[0].Index
			return true
		}
		return false
	})
	snd, err := l.Sender(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	for _, flood := range []struct {
		name     string
		newMAC   bool
		duration time.Duration
	}{
		{"one sender, a new identity each frame", false, 6 * time.Second},
		{"a new sender each frame", true, 6 * time.Second},
	} {
		t.Run(strings.ReplaceAll(flood.name, " ", "-"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), flood.duration)
			defer cancel()
			sent := make(chan int, 1)
			go func() {
				n := 0
				defer func() { sent <- n }()
				for ; ctx.Err() == nil; n++ {
					mac := [6]byte{0x02, 0x66, 0, 0, 0, 1}
					if flood.newMAC {
						binary.BigEndian.PutUint32(mac[2:], uint32(n))
					}
					// A new identity each frame: the chassis ID is
					// the frame's source, so the port ID varies.
					f := frames.LLDP(mac, fmt.Sprintf("forged%d", n), "forged", 120)
					if err := snd.Send(f); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			var last forwarderapi.PortStatus
			seen := 0
			for ctx.Err() == nil {
				time.Sleep(200 * time.Millisecond)
				st, err := d.Status(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range st.Ports {
					if p.Name != seg.Ports[0] {
						continue
					}
					last = p
					real := slices.IndexFunc(p.Neighbors, func(s forwarderapi.Neighbor) bool { return s.SystemName == "neighbour-a" })
					switch {
					case real < 0:
						t.Fatalf("after %d checks the flood pushed neighbour-a off its port: %d neighbours, %d dropped", seen, len(p.Neighbors), p.LLDPDropped)
					case p.Neighbors[real].Index != index:
						t.Fatalf("neighbour-a renumbered from %d to %d", index, p.Neighbors[real].Index)
					case time.Since(p.Neighbors[real].LastSeen) > time.Duration(p.Neighbors[real].TTL)*time.Second/2:
						t.Errorf("neighbour-a last refreshed %v ago (TTL %d s): the flood crowds out its frames", time.Since(p.Neighbors[real].LastSeen).Round(time.Millisecond), p.Neighbors[real].TTL)
					case len(p.Neighbors) > lldp.MaxPerPort:
						t.Fatalf("%d neighbours on one port, want at most %d", len(p.Neighbors), lldp.MaxPerPort)
					}
					seen++
				}
			}
			n := <-sent
			if last.LLDPDropped == 0 || len(last.Neighbors) != lldp.MaxPerPort {
				t.Errorf("after %d forged frames: %d neighbours, %d newcomers dropped; want a full table (%d) and drops counted", n, len(last.Neighbors), last.LLDPDropped, lldp.MaxPerPort)
			}
			t.Logf("%d forged frames in %v: neighbour-a kept its place (index %d) through %d checks; %d neighbours, %d newcomers dropped",
				n, flood.duration, index, seen, len(last.Neighbors), last.LLDPDropped)
		})
	}
}
