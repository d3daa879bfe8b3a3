package pcapfilter

import (
	"encoding/binary"
	"net/netip"

	"github.com/ncpos/ncpos/internal/frames"
)

// The corpus the differential test runs both compilers' programs over:
// every kind of frame a primitive looks at, with addresses and ports that
// match the expressions and ones that do not, and the malformed frames
// (runts, truncated headers) on which a load past the end decides.

var (
	macA  = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	macB  = [6]byte{0x02, 0, 0, 0, 0, 0x02}
	bcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	lldpG = [6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}
	stpG  = [6]byte{0x01, 0x80, 0xc2, 0, 0, 0}
	v4mc  = [6]byte{0x01, 0, 0x5e, 0, 0, 0x01}
	v6mc  = [6]byte{0x33, 0x33, 0, 0, 0, 0x01}
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// ip4 is an IPv4 header of ihl words (options are filled with bytes
// that read as port 80 where a header without them would end) with the
// flags and fragment offset field frag.
func ip4(src, dst string, proto byte, frag uint16, ihl int, payload []byte) []byte {
	h := make([]byte, 4*ihl, 4*ihl+len(payload))
	for i := 20; i+1 < len(h); i += 2 {
		h[i+1] = 80
	}
	h[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)+len(payload)))
	binary.BigEndian.PutUint16(h[6:], frag)
	h[8], h[9] = 64, proto
	s, d := addr(src).As4(), addr(dst).As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	return append(h, payload...)
}

func v4(src, dst string, proto byte, payload []byte) []byte {
	return ip4(src, dst, proto, 0, 5, payload)
}

func v6(src, dst string, next byte, payload []byte) []byte {
	return frames.IPv6(addr(src), addr(dst), next, payload)
}

func tcp(sport, dport uint16) []byte { return frames.TCP(sport, dport, 0x02, nil) }
func udp(sport, dport uint16) []byte { return frames.UDP(sport, dport, []byte("payload!")) }

func sctp(sport, dport uint16) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	return b
}

func eth(dst [6]byte, et uint16, payload []byte) []byte {
	return frames.Ethernet(dst, macA, et, payload)
}

// tag inserts an 802.1Q-style tag with tpid outermost.
func tag(frame []byte, tpid, tci uint16) []byte {
	out := append([]byte(nil), frame[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, frame[12:]...)
}

// mpls is an MPLS frame with labels (the last one bottom of stack).
func mpls(payload []byte, labels ...uint32) []byte {
	var b []byte
	for i, l := range labels {
		e := l<<12 | 64
		if i == len(labels)-1 {
			e |= 1 << 8
		}
		b = binary.BigEndian.AppendUint32(b, e)
	}
	return eth(macB, 0x8847, append(b, payload...))
}

// arp is an ARP (or, with et 0x8035, RARP) packet of operation op.
func arp(et uint16, op uint16, spa, tpa string) []byte {
	f := frames.ARPWhoHas(macA, addr(spa), addr(tpa))
	binary.BigEndian.PutUint16(f[12:], et)
	binary.BigEndian.PutUint16(f[20:], op)
	return f
}

// llc is an 802.3 frame with an LLC header.
func llc(dst [6]byte, dsap, ssap byte) []byte {
	p := append([]byte{dsap, ssap, 0x03}, make([]byte, 35)...)
	return eth(dst, uint16(len(p)), p)
}

type sample struct {
	name  string
	frame []byte
}

func corpus() []sample {
	ipTCP := eth(macB, 0x0800, v4("10.0.0.1", "10.0.0.2", 6, tcp(1234, 80)))
	ipUDP := eth(macB, 0x0800, v4("10.0.0.2", "192.168.1.5", 17, udp(5353, 53)))
	ip6UDP := eth(macB, 0x86dd, v6("2001:db8::1", "2001:db8::2", 17, udp(40000, 53)))
	ip6TCP := eth(macB, 0x86dd, v6("2001:db8:2000::7", "2001:db8::1", 6, tcp(80, 40000)))
	fragHdr := append([]byte{6, 0, 0, 1, 0, 0, 0, 9}, tcp(1234, 80)...)
	igmp := []byte{0x16, 0, 0, 0, 224, 0, 0, 1}
	lldp := eth(lldpG, 0x88cc, []byte{0x02, 0x07, 0x04, 2, 0, 0, 0, 0, 1, 0x04, 0x05, 0x05, 'e', 't', 'h', '0', 0x06, 0x02, 0, 120, 0, 0})
	s := []sample{
		{"ipv4 tcp 10.0.0.1:1234>10.0.0.2:80", ipTCP},
		{"ipv4 tcp 192.168.1.5:22>10.0.0.1:40000", eth(macB, 0x0800, v4("192.168.1.5", "10.0.0.1", 6, tcp(22, 40000)))},
		{"ipv4 tcp 10.0.0.9:443>172.16.0.1:50000", eth(macB, 0x0800, v4("10.0.0.9", "172.16.0.1", 6, tcp(443, 50000)))},
		{"ipv4 tcp ports 15>8080", eth(macB, 0x0800, v4("10.1.2.3", "10.0.0.2", 6, tcp(15, 8080)))},
		{"ipv4 tcp ports 80>80", eth(macB, 0x0800, v4("10.0.0.2", "10.0.0.1", 6, tcp(80, 80)))},
		{"ipv4 tcp dst port 1100", eth(macB, 0x0800, v4("10.0.0.2", "10.0.0.1", 6, tcp(5000, 1100)))},
		{"ipv4 tcp dst port 1149", eth(macB, 0x0800, v4("10.0.0.2", "10.0.0.1", 6, tcp(5000, 1149)))},
		{"ipv4 udp 53", ipUDP},
		{"ipv4 udp 68>67 broadcast", eth(bcast, 0x0800, v4("0.0.0.0", "255.255.255.255", 17, udp(68, 67)))},
		{"ipv4 udp multicast 239.1.2.3", eth(v4mc, 0x0800, v4("10.0.0.1", "239.1.2.3", 17, udp(5000, 5000)))},
		{"ipv4 udp 8 to host 0.0.0.80", eth(macB, 0x0800, v4("0.0.0.80", "10.1.0.0", 17, udp(8, 123)))},
		{"ipv4 icmp", eth(macB, 0x0800, v4("10.0.0.1", "10.0.0.2", 1, frames.ICMPEcho(8, 1, 1, nil)))},
		{"ipv4 igmp", eth(v4mc, 0x0800, v4("10.0.0.5", "224.0.0.1", 2, igmp))},
		{"ipv4 sctp 80", eth(macB, 0x0800, v4("10.0.0.1", "10.0.0.2", 132, sctp(2905, 80)))},
		{"ipv4 esp", eth(macB, 0x0800, v4("10.0.0.1", "10.0.0.2", 50, make([]byte, 16)))},
		{"ipv4 gre", eth(macB, 0x0800, v4("10.0.0.1", "10.0.0.2", 47, make([]byte, 8)))},
		{"ipv4 pim", eth(macB, 0x0800, v4("10.0.0.1", "224.0.0.13", 103, make([]byte, 8)))},
		{"ipv4 vrrp", eth(macB, 0x0800, v4("10.0.0.1", "224.0.0.18", 112, make([]byte, 8)))},
		{"ipv4 later fragment of tcp 80", eth(macB, 0x0800, ip4("10.0.0.1", "10.0.0.2", 6, 185, 5, tcp(1234, 80)))},
		{"ipv4 first fragment tcp 80", eth(macB, 0x0800, ip4("10.0.0.1", "10.0.0.2", 6, 0x2000, 5, tcp(1234, 80)))},
		{"ipv4 options ihl 6 tcp 22>443", eth(macB, 0x0800, ip4("10.0.0.1", "10.0.0.2", 6, 0, 6, tcp(22, 443)))},
		{"ipv4 options ihl 7 tcp 1234>80", eth(macB, 0x0800, ip4("10.0.0.3", "10.0.0.2", 6, 0, 7, tcp(1234, 80)))},
		{"ipv4 options ihl 6 udp 53", eth(macB, 0x0800, ip4("10.0.0.3", "10.0.0.2", 17, 0, 6, udp(1000, 53)))},
		{"ipv6 udp 53", ip6UDP},
		{"ipv6 tcp 80>40000", ip6TCP},
		{"ipv6 tcp 443", eth(macB, 0x86dd, v6("2001:db8::2", "fe80::1", 6, tcp(50000, 443)))},
		{"ipv6 icmp6 to ff02::1", eth(v6mc, 0x86dd, v6("fe80::1", "ff02::1", 58, frames.ICMPEcho(128, 1, 1, nil)))},
		{"ipv6 sctp 80", eth(macB, 0x86dd, v6("::1", "::1", 132, sctp(80, 2905)))},
		{"ipv6 fragment header tcp 80", eth(macB, 0x86dd, v6("2001:db8::1", "2001:db8::2", 44, fragHdr))},
		{"ipv6 esp", eth(macB, 0x86dd, v6("2001:db8::1", "2001:db8::2", 50, make([]byte, 16)))},
		{"arp request 10.0.0.1>10.0.0.2", frames.ARPWhoHas(macA, addr("10.0.0.1"), addr("10.0.0.2"))},
		{"arp reply 10.0.0.2>10.0.0.1", arp(0x0806, 2, "10.0.0.2", "10.0.0.1")},
		{"rarp 10.0.0.1", arp(0x8035, 3, "10.0.0.1", "10.0.0.1")},
		{"vlan 42 ipv4 tcp 80", tag(ipTCP, 0x8100, 42)},
		{"vlan 42 pcp 7 ipv4 udp", tag(ipUDP, 0x8100, 0xe000|42)},
		{"vlan 7 ipv6 udp 53", tag(ip6UDP, 0x8100, 7)},
		{"vlan 42 arp", tag(frames.ARPWhoHas(macA, addr("10.0.0.1"), addr("10.0.0.2")), 0x8100, 42)},
		{"vlan 0 ipv4 tcp", tag(ipTCP, 0x8100, 0)},
		{"qinq 88a8 100 / 8100 7 ipv4 tcp", tag(tag(ipTCP, 0x8100, 7), 0x88a8, 100)},
		{"qinq 9100 42 / 8100 7 ipv6 udp", tag(tag(ip6UDP, 0x8100, 7), 0x9100, 42)},
		{"qinq 8100 7 / 8100 42 ipv4 udp", tag(tag(ipUDP, 0x8100, 42), 0x8100, 7)},
		{"mpls 100 ipv4 tcp 80", mpls(v4("10.0.0.1", "10.0.0.2", 6, tcp(1234, 80)), 100)},
		{"mpls 200/100 ipv4 udp 53", mpls(v4("10.0.0.2", "192.168.1.5", 17, udp(5353, 53)), 200, 100)},
		{"mpls 100/200 ipv4 tcp", mpls(v4("10.0.0.1", "10.0.0.2", 6, tcp(1234, 80)), 100, 200)},
		{"mpls 100 ipv6 udp 53", mpls(v6("2001:db8::1", "2001:db8::2", 17, udp(40000, 53)), 100)},
		{"vlan 42 mpls 100 ipv4", tag(mpls(v4("10.0.0.1", "10.0.0.2", 6, tcp(1234, 80)), 100), 0x8100, 42)},
		{"lldp", lldp},
		{"stp llc", llc(stpG, 0x42, 0x42)},
		{"iso llc", llc(macB, 0xfe, 0xfe)},
		{"llc sap 100", llc(macB, 100, 100)},
		{"ether broadcast 0x0800 payload", eth(bcast, 0x0800, v4("10.0.0.1", "10.0.0.255", 17, udp(137, 137)))},
		{"ethertype 0x9000 to macA", frames.Ethernet(macA, macB, 0x9000, make([]byte, 46))},
		{"runt 10 bytes", ipTCP[:10]},
		{"runt 14 bytes", ipTCP[:14]},
		{"runt 20 bytes", ipTCP[:20]},
		{"ipv4 cut in dst addr", ipTCP[:32]},
		{"ipv4 cut after header", ipTCP[:34]},
		{"ipv4 tcp cut after src port", eth(macB, 0x0800, v4("10.0.0.2", "10.0.0.1", 6, tcp(80, 1234)))[:36]},
		{"ipv4 tcp cut in dst port", ipTCP[:37]},
		{"ipv4 tcp cut after src port 443", eth(macB, 0x0800, v4("10.0.0.2", "10.0.0.1", 6, tcp(443, 1234)))[:36]},
		{"ipv6 udp cut after src port 67", eth(macB, 0x86dd, v6("2001:db8::1", "2001:db8::2", 17, udp(67, 1)))[:56]},
		{"ipv6 cut in src addr", ip6UDP[:30]},
		{"ipv6 cut after header", ip6UDP[:54]},
		{"ipv6 cut after src port", eth(macB, 0x86dd, v6("2001:db8::1", "2001:db8::2", 17, udp(53, 1)))[:56]},
		{"arp cut", frames.ARPWhoHas(macA, addr("10.0.0.1"), addr("10.0.0.2"))[:32]},
		{"vlan cut", tag(ipTCP, 0x8100, 42)[:18]},
		{"vlan cut in ipv4", tag(ipTCP, 0x8100, 42)[:30]},
		{"mpls cut", mpls(v4("10.0.0.1", "10.0.0.2", 6, tcp(1234, 80)), 100)[:20]},
	}
	for _, m := range frames.MalformedCases() {
		s = append(s, sample{"malformed " + m.Name, m.Frame})
	}
	return s
}
