// Package lab emulates an ncpos appliance with network namespaces on a
// Linux host, for tests, demos and the bench. For each segment there is a
// traffic namespace on each side, joined by a veth to the port interface
// inside the forwarder's namespace:
//
//	ncpt-ID-0a [ncpt-ID-t0a] ==veth== [ncpt-ID-p0a] ncpt-ID-fw [ncpt-ID-p0b] ==veth== [ncpt-ID-t0b] ncpt-ID-0b
//
// forwarderd runs in ncpt-ID-fw bridging p0a and p0b; traffic is sent and
// received only in the traffic namespaces. Every name starts with Prefix
// and the lab's ID, so Cleanup can always remove what a crashed run left.
// Nothing is ever addressed outside these namespaces.
//
// Traffic comes from AF_PACKET sockets (Sender: exact frames, for the
// tests) or from the bench's generator (Generator: BPF_PROG_RUN live
// frames, paced or flat out), and ends in Sinks: the bench's counting
// sinks on the traffic ends, which count, copy out (for byte-for-byte
// checks) and drop. The in-kernel traffic is bench/xdptraffic's, the
// self-test's own; the lab holds namespaces, processes and targets. A veth drops frames XDP redirects
// into it unless its peer has an XDP program or GRO, so the traffic ends
// always have one of the two.
//
// Running it (root; without root the tests skip, or fail when
// NCPOS_REQUIRE_LAB=1, as in CI):
//
//	go test ./forwarder/... ./lab/... ./services/forwarderd/...
//	NCPOS_LAB_RACE=1 go test ./lab/...         # forwarderd built with -race
//	go run ./cmd/ncpos bench -compare          # the comparisons, about 2 minutes
//	go run ./cmd/ncpos lab up [-engine afxdp] [-mode service] [-segments 2]
//	go run ./cmd/ncpos lab down
package lab

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/vishvananda/netlink"
)

// Config sizes a lab.
type Config struct {
	ID       string // 1-4 of a-z and 0-9; names are ncpt-ID-...
	Segments int    // at least 1
	// Queues is the number of queues of each port veth (1 when 0), so
	// that the forwarder's queue-to-core association has work to do.
	Queues int
}

// Lab is a running emulation.
type Lab struct {
	ID       string
	FW       *Netns // where forwarderd runs
	Segments []*Segment
}

// Segment is one segment's namespaces and interfaces.
type Segment struct {
	Name      string    // seg0, seg1, ...
	Ports     [2]string // port interfaces inside FW
	Hosts     [2]*Netns // traffic namespaces
	HostIfs   [2]string // the traffic ends, one in each of Hosts
	HostIndex [2]int
}

var idRE = regexp.MustCompile(`^[a-z0-9]{1,4}$`)

// Name is the name of a lab object: ncpt-ID-suffix.
func (l *Lab) Name(suffix string) string { return Prefix + l.ID + "-" + suffix }

// New builds the namespaces and veths. On failure it removes whatever it
// made.
func New(cfg Config) (_ *Lab, err error) {
	if !idRE.MatchString(cfg.ID) {
		return nil, fmt.Errorf("lab: id %q: want 1-4 of a-z, 0-9", cfg.ID)
	}
	if cfg.Segments < 1 || cfg.Segments > 32 {
		return nil, fmt.Errorf("lab: %d segments, want 1 to 32", cfg.Segments)
	}
	if cfg.Queues < 1 {
		cfg.Queues = 1
	}
	l := &Lab{ID: cfg.ID}
	// Never take over (or tear down) a lab that another run is using;
	// what an interrupted run left is removed first.
	if err := l.claim(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if l.FW, err = newNetns(l.Name("fw")); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Segments; i++ {
		n := strconv.Itoa(i)
		s := &Segment{Name: "seg" + n}
		l.Segments = append(l.Segments, s)
		for side, c := range []string{"a", "b"} {
			if s.Hosts[side], err = newNetns(l.Name(n + c)); err != nil {
				return nil, err
			}
			s.Ports[side], s.HostIfs[side] = l.Name("p"+n+c), l.Name("t"+n+c)
			if err := l.veth(s.Ports[side], s.HostIfs[side], s.Hosts[side], cfg.Queues); err != nil {
				return nil, err
			}
			hl, err := s.Hosts[side].Link(s.HostIfs[side])
			if err != nil {
				return nil, err
			}
			s.HostIndex[side] = hl.Attrs().Index
		}
	}
	return l, nil
}

// NeighbourMTU is the MTU of the traffic ends.
const NeighbourMTU = 9216

// veth creates the pair port (in FW) and host (in ns) and brings both up.
func (l *Lab) veth(port, host string, ns *Netns, queues int) error {
	v := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: port, MTU: 1500, NumTxQueues: queues, NumRxQueues: queues,
			HardwareAddr: mac(port)},
		PeerName:         host,
		PeerNamespace:    netlink.NsFd(ns.ns),
		PeerHardwareAddr: mac(host),
	}
	if err := l.FW.nl.LinkAdd(v); err != nil {
		return fmt.Errorf("lab: creating veth %s/%s: %w", port, host, err)
	}
	hl, err := ns.Link(host)
	if err != nil {
		return err
	}
	// A neighbour may send anything a cable carries, jumbo frames too;
	// what the port takes is the forwarder's MTU.
	if err := ns.nl.LinkSetMTU(hl, NeighbourMTU); err != nil {
		return fmt.Errorf("lab: %s MTU %d: %w", host, NeighbourMTU, err)
	}
	if err := ns.nl.LinkSetUp(hl); err != nil {
		return fmt.Errorf("lab: %s up: %w", host, err)
	}
	pl, err := l.FW.Link(port)
	if err != nil {
		return err
	}
	if err := l.FW.nl.LinkSetUp(pl); err != nil {
		return fmt.Errorf("lab: %s up: %w", port, err)
	}
	return nil
}

// mac derives a stable locally administered MAC from an interface name.
func mac(name string) []byte {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return []byte{0x02, 0x6e, byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h)}
}

// SegmentArgs are forwarderd's -segment flags for this lab.
func (l *Lab) SegmentArgs() []string {
	var args []string
	for _, s := range l.Segments {
		args = append(args, "-segment", fmt.Sprintf("%s=%s,%s", s.Name, s.Ports[0], s.Ports[1]))
	}
	return args
}

// AttachedXDP lists the port interfaces in the forwarder's namespace that
// have an XDP program attached.
func (l *Lab) AttachedXDP() ([]string, error) {
	var out []string
	for _, s := range l.Segments {
		for _, p := range s.Ports {
			link, err := l.FW.Link(p)
			if err != nil {
				return nil, err
			}
			if x := link.Attrs().Xdp; x != nil && x.Attached {
				out = append(out, fmt.Sprintf("%s (prog %d)", p, x.ProgId))
			}
		}
	}
	return out, nil
}

// Close deletes every namespace of the lab, and with them its interfaces.
func (l *Lab) Close() error {
	var errs []error
	for _, s := range l.Segments {
		for _, h := range s.Hosts {
			if h != nil {
				errs = append(errs, h.Delete())
			}
		}
	}
	if l.FW != nil {
		errs = append(errs, l.FW.Delete())
	}
	errs = append(errs, Remove(l.ID))
	return errors.Join(errs...)
}

// SetLinkUp brings an interface of the forwarder's namespace up or down,
// as a cable pulled or plugged would.
func (l *Lab) SetLinkUp(link netlink.Link, up bool) error {
	if up {
		return l.FW.nl.LinkSetUp(link)
	}
	return l.FW.nl.LinkSetDown(link)
}

// Hostify makes the traffic ends usable by hand: each gets an address
// (198.18.S.1/24 on side a, 198.18.S.2/24 on side b of segment S, a range
// reserved for benchmarks) and GRO, so that a veth takes the frames XDP
// redirects into it without an XDP program of its own, and checksums
// computed in software (see setTxChecksum). Then `ip netns exec
// ncpt-ID-0a ping 198.18.0.2` crosses the segment.
func (l *Lab) Hostify() error {
	for i, s := range l.Segments {
		for side := 0; side < 2; side++ {
			ns, ifname := s.Hosts[side], s.HostIfs[side]
			link, err := ns.Link(ifname)
			if err != nil {
				return err
			}
			addr, err := netlink.ParseAddr(fmt.Sprintf("198.18.%d.%d/24", i, side+1))
			if err != nil {
				return err
			}
			if err := ns.nl.AddrAdd(link, addr); err != nil {
				return fmt.Errorf("lab: address on %s: %w", ifname, err)
			}
			err = ns.Do(func() error {
				if err := setTxChecksum(ifname, false); err != nil {
					return err
				}
				return setGRO(ifname, true)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
