package lab_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/dataport"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/lab"
)

// The box's management address in TestDataPortsSilent, on a veth
// of the forwarder's namespace, and the attacker's.
var (
	mgmtAddr  = netip.MustParseAddr("198.51.100.1")
	mgmtAddr6 = netip.MustParseAddr("2001:db8:100::1")
)

// The attacker's addresses in window w: another in each, so that what the
// box still sends for an earlier window (a SYN-ACK it retransmits, the ARP
// that goes with it) is not taken for an answer in this one.
func evilAddr(w int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(66 + w)}) }
func evilAddr6(w int) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0x01, 0x00, 15: byte(0x66 + w)})
}

const mgmtPort = 8080

// TestDataPortsSilent is an attacker on a data port, cabled to the box's
// port p0a, who knows the management addresses: in each window it asks
// for the management address by ARP and ND and sends TCP SYNs to the
// management listener, and the box must answer nothing. The first window
// is the port as the kernel leaves it, where the box does answer, so that
// the probe is known to see answers.
func TestDataPortsSilent(t *testing.T) {
	l := newLab(t, 1, 1)
	port := l.Segments[0].Ports[0]
	mg := l.Name("mg")
	err := l.FW.Do(func() error {
		// A veth whose other end stays in this namespace stands for
		// the management NIC.
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: mg}, PeerName: mg + "x"}); err != nil {
			return err
		}
		for _, ifname := range []string{mg, port} {
			// No duplicate address detection: the addresses answer at once.
			if err := sysctl("ipv6", ifname, "accept_dad", "0"); err != nil {
				return err
			}
			if err := sysctl("ipv6", ifname, "disable_ipv6", "0"); err != nil {
				return err
			}
		}
		// The kernel's own defaults, whatever the host has: a namespace
		// inherits the host's reverse-path filter.
		for _, ifname := range []string{"all", "default", port} {
			if err := sysctl("ipv4", ifname, "rp_filter", "0"); err != nil {
				return err
			}
		}
		lk, err := netlink.LinkByName(mg)
		if err != nil {
			return err
		}
		for _, a := range []string{mgmtAddr.String() + "/24", mgmtAddr6.String() + "/64"} {
			addr, _ := netlink.ParseAddr(a)
			addr.Flags = unix.IFA_F_NODAD
			if err := netlink.AddrAdd(lk, addr); err != nil {
				return fmt.Errorf("address %s: %w", a, err)
			}
		}
		if err := netlink.LinkSetUp(lk); err != nil {
			return err
		}
		for _, a := range []netip.Addr{mgmtAddr, mgmtAddr6} {
			ln, err := net.Listen("tcp", netip.AddrPortFrom(a, mgmtPort).String())
			if err != nil {
				return err
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	probe := newProbe(t, l, mg+"x")

	t.Run("unprotected port answers", func(t *testing.T) {
		got := probe.run(t)
		// The SYN-ACK goes out through the management interface, whose
		// far end answers no ARP: the box's ARP request for the
		// attacker there shows that it took the SYN.
		if got["arp"] == 0 || got["nd"] == 0 || got["via_mgmt"] == 0 {
			t.Fatalf("a port as the kernel leaves it: answers %v, want ARP, ND and an accepted SYN (the probe sees nothing)", got)
		}
		t.Logf("the kernel's default port answers: %v", got)
	})
	// Init quiets every data port at boot; before forwarderd starts they
	// are down too, here up, so that the sysctls alone are tested.
	if err := l.FW.Do(func() error { return dataport.Quiet("/", port) }); err != nil {
		t.Fatal(err)
	}
	t.Run("before forwarderd starts", func(t *testing.T) { probe.wantSilence(t) })
	d := startForwarderd(t, l, "-engine", "xdp")
	t.Run("while forwarderd runs", func(t *testing.T) { probe.wantSilence(t) })
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Run("after forwarderd is killed", func(t *testing.T) {
		progs, err := l.AttachedXDP()
		if err != nil {
			t.Fatal(err)
		}
		if len(progs) > 0 {
			t.Fatalf("XDP programs still attached: %v", progs)
		}
		probe.wantSilence(t)
	})
	// The fence alone: with ARP and reverse-path filtering back at the
	// kernel's defaults, nothing still answers.
	if err := l.FW.Do(func() error {
		for _, s := range [][2]string{{"arp_ignore", "0"}, {"rp_filter", "0"}} {
			if err := sysctl("ipv4", port, s[0], s[1]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Run("fence alone", func(t *testing.T) { probe.wantSilence(t) })
}

func sysctl(family, ifname, name, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys/net", family, "conf", ifname, name), []byte(value), 0o644)
}

// probe sends the attacker's frames from the traffic end t0a and listens
// there for answers.
type probe struct {
	snd     *lab.Sender
	fd      int // on the attacker's end
	mgmtFD  int // on the far end of the management interface
	portMAC [6]byte
	evilMAC [6]byte
	seq     uint32
	win     int // the window being probed
}

func newProbe(t *testing.T, l *lab.Lab, mgmtPeer string) *probe {
	s := l.Segments[0]
	p := &probe{}
	var err error
	if p.snd, err = l.Sender(0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.snd.Close() })
	pl, err := l.FW.Link(s.Ports[0])
	if err != nil {
		t.Fatal(err)
	}
	copy(p.portMAC[:], pl.Attrs().HardwareAddr)
	hl, err := s.Hosts[0].Link(s.HostIfs[0])
	if err != nil {
		t.Fatal(err)
	}
	copy(p.evilMAC[:], hl.Attrs().HardwareAddr)
	p.fd = packetSocket(t, s.Hosts[0], hl.Attrs().Index)
	// A SYN accepted through the data port is answered through the
	// management interface (the route back to the attacker's address is
	// there), so that is where the answer shows.
	ml, err := l.FW.Link(mgmtPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.FW.Do(func() error { return netlink.LinkSetUp(ml) }); err != nil {
		t.Fatal(err)
	}
	p.mgmtFD = packetSocket(t, l.FW, ml.Attrs().Index)
	tv := unix.NsecToTimeval(int64(20 * time.Millisecond))
	for _, fd := range []int{p.fd, p.mgmtFD} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// packetSocket opens an AF_PACKET socket in ns that receives every frame
// on the interface ifindex, closed when the test ends.
func packetSocket(t *testing.T, ns *lab.Netns, ifindex int) int {
	t.Helper()
	fd := -1
	err := ns.Do(func() (err error) {
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// frames are the attacker's: an ARP who-has for the management address,
// an ND solicitation for its IPv6 address, and TCP SYNs to the listener
// sent to the port's MAC (as a neighbour who learnt it would).
func (p *probe) frames() [][]byte {
	p.seq++
	evil, evil6 := evilAddr(p.win), evilAddr6(p.win)
	sport := 40000 + uint16(p.seq)
	return [][]byte{
		frames.ARPWhoHas(p.evilMAC, evil, mgmtAddr),
		frames.NeighborSolicitationFrom(p.evilMAC, evil6, mgmtAddr6),
		// The port's own link-local address, which it has whenever
		// IPv6 is on.
		frames.NeighborSolicitationFrom(p.evilMAC, evil6, frames.LinkLocal(p.portMAC)),
		frames.TCPSYN(p.portMAC, p.evilMAC, evil, mgmtAddr, sport, mgmtPort),
		frames.TCPSYN(p.portMAC, p.evilMAC, evil6, mgmtAddr6, sport, mgmtPort),
	}
}

// run sends the frames three times and counts the answers by kind.
func (p *probe) run(t *testing.T) map[string]int {
	t.Helper()
	p.win++
	// Drain what is queued from before.
	buf := make([]byte, 2048)
	for {
		if _, _, err := unix.Recvfrom(p.fd, buf, unix.MSG_DONTWAIT); err != nil {
			break
		}
	}
	for range 3 {
		for _, f := range p.frames() {
			if err := p.snd.Send(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := map[string]int{}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		for i, fd := range []int{p.fd, p.mgmtFD} {
			n, from, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && i == 0 && ll.Pkttype == unix.PACKET_OUTGOING {
				continue // the attacker's own frames
			}
			kind := answerKind(buf[:n])
			if i == 1 {
				if !towardsAttacker(buf[:n], p.win) {
					continue
				}
				kind = "via_mgmt"
			}
			if kind == "" {
				kind = "other"
			}
			got[kind]++
		}
	}
	return got
}

// towardsAttacker tells whether the box sent a frame to the attacker's
// addresses (or asked for them by ARP).
func towardsAttacker(f []byte, w int) bool {
	if len(f) < 14 {
		return false
	}
	e, e6 := evilAddr(w).As4(), evilAddr6(w).As16()
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0806:
		return len(f) >= 42 && [4]byte(f[38:42]) == e
	case 0x0800:
		return len(f) >= 34 && [4]byte(f[30:34]) == e
	case 0x86dd:
		return len(f) >= 54 && [16]byte(f[38:54]) == e6
	}
	return false
}

func (p *probe) wantSilence(t *testing.T) {
	t.Helper()
	if got := p.run(t); len(got) > 0 {
		t.Errorf("the box answered the attacker on its data port: %v", got)
	}
}

// answerKind tells an ARP reply, an ND advertisement and a TCP answer (a
// SYN-ACK or a reset) apart.
func answerKind(f []byte) string {
	if len(f) < 14 {
		return ""
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0806:
		if len(f) >= 22 && binary.BigEndian.Uint16(f[20:]) == 2 {
			return "arp"
		}
	case 0x0800:
		if len(f) >= 14+20+14 && f[14+9] == 6 {
			return "tcp"
		}
	case 0x86dd:
		if len(f) >= 14+40+1 {
			switch f[14+6] {
			case 58:
				if f[14+40] == 136 {
					return "nd"
				}
			case 6:
				return "tcp"
			}
		}
	}
	return ""
}
