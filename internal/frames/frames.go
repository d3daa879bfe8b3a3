// Package frames builds Ethernet frames by hand for tests, the lab and the
// self-test, so that every byte is known: the tests compare what leaves a
// segment with what entered it.
package frames

import (
	"encoding/binary"
	"net/netip"
)

// MACs used by the lab; locally administered, never seen outside it.
var (
	MACA = [6]byte{0x02, 0x6e, 0x63, 0x70, 0x00, 0x0a}
	MACB = [6]byte{0x02, 0x6e, 0x63, 0x70, 0x00, 0x0b}
)

// Ethernet returns an Ethernet header followed by payload.
func Ethernet(dst, src [6]byte, etherType uint16, payload []byte) []byte {
	b := make([]byte, 14, 14+len(payload))
	copy(b[0:6], dst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], etherType)
	return append(b, payload...)
}

// VLAN inserts 802.1Q tags (the first one outermost) after the MACs.
func VLAN(frame []byte, vids ...uint16) []byte {
	out := append([]byte(nil), frame[:12]...)
	for _, vid := range vids {
		out = binary.BigEndian.AppendUint16(out, 0x8100)
		out = binary.BigEndian.AppendUint16(out, vid&0x0fff)
	}
	return append(out, frame[12:]...)
}

// Pad extends a frame with zeros to at least n bytes.
func Pad(frame []byte, n int) []byte {
	for len(frame) < n {
		frame = append(frame, 0)
	}
	return frame
}

// IPv4 returns an IPv4 header (no options) and payload.
func IPv4(src, dst netip.Addr, proto uint8, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	h[8] = 64
	h[9] = proto
	s, d := src.As4(), dst.As4()
	copy(h[12:16], s[:])
	copy(h[16:20], d[:])
	binary.BigEndian.PutUint16(h[10:], Checksum(h))
	return append(h, payload...)
}

// IPv6 returns an IPv6 header and payload.
func IPv6(src, dst netip.Addr, next uint8, payload []byte) []byte {
	h := make([]byte, 40, 40+len(payload))
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6] = next
	h[7] = 64
	s, d := src.As16(), dst.As16()
	copy(h[8:24], s[:])
	copy(h[24:40], d[:])
	return append(h, payload...)
}

// UDP returns a UDP header (checksum 0) and payload.
func UDP(sport, dport uint16, payload []byte) []byte {
	h := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(payload)))
	return append(h, payload...)
}

// TCP returns a TCP header with the given flags and payload.
func TCP(sport, dport uint16, flags uint8, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	h[12] = 5 << 4
	h[13] = flags
	binary.BigEndian.PutUint16(h[14:], 65535)
	return append(h, payload...)
}

// ICMPEcho returns an ICMP (or ICMPv6, with typ 128) echo request.
func ICMPEcho(typ uint8, id, seq uint16, payload []byte) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = typ
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], seq)
	return append(h, payload...)
}

// Addresses of the lab's traffic: documentation ranges, never routed.
var (
	AddrA  = netip.MustParseAddr("198.18.0.1")
	AddrB  = netip.MustParseAddr("198.18.0.2")
	Addr6A = netip.MustParseAddr("2001:db8::a")
	Addr6B = netip.MustParseAddr("2001:db8::b")
)

// UDPFrame is an IPv4/UDP frame of exactly size bytes (at least 42), from
// A to B, with sport and dport; its payload is filled with a pattern so
// that corruption shows.
func UDPFrame(size int, sport, dport uint16) []byte {
	n := max(size-14-20-8, 0)
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i)
	}
	return Ethernet(MACB, MACA, 0x0800, IPv4(AddrA, AddrB, 17, UDP(sport, dport, payload)))
}

// ARPRequest is a broadcast ARP who-has for AddrB.
func ARPRequest() []byte { return ARPWhoHas(MACA, AddrA, AddrB) }

// ARPWhoHas is a broadcast ARP request for target from mac and src.
func ARPWhoHas(mac [6]byte, src, target netip.Addr) []byte {
	p := make([]byte, 28)
	binary.BigEndian.PutUint16(p[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(p[2:], 0x0800) // IPv4
	p[4], p[5] = 6, 4
	binary.BigEndian.PutUint16(p[6:], 1) // request
	copy(p[8:14], mac[:])
	a, b := src.As4(), target.As4()
	copy(p[14:18], a[:])
	copy(p[24:28], b[:])
	return Pad(Ethernet([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, mac, 0x0806, p), 60)
}

// Checksum is the Internet checksum of b (RFC 1071); over a header that
// holds its own checksum it is 0.
func Checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// MalformedCase is a frame with a known defect and the reasons the
// datapath must count for it.
type MalformedCase struct {
	Name    string
	Frame   []byte
	Reasons []string
}

// MalformedCases are the frames a hostile neighbour can send: runts, truncated IPv4,
// IPv6 and TCP headers, IHL below 5, four stacked VLAN tags, and the
// largest frames the MTU allows (which are not malformed at all).
func MalformedCases() []MalformedCase {
	udp := IPv4(AddrA, AddrB, 17, UDP(1, 2, make([]byte, 18)))
	tcp := IPv4(AddrA, AddrB, 6, TCP(1000, 80, 0x02, nil))
	ihl := IPv4(AddrA, AddrB, 17, UDP(1, 2, make([]byte, 18)))
	ihl[0] = 0x43
	badVersion := append([]byte(nil), udp...)
	badVersion[0] = 0x55
	ip6 := IPv6(Addr6A, Addr6B, 17, UDP(1, 2, make([]byte, 8)))
	longIHL := IPv4(AddrA, AddrB, 17, make([]byte, 30))
	longIHL[0] = 0x4f // 60-byte header in a 50-byte packet
	// TCP header cut after 8 bytes, IP total length saying so.
	truncTCP := IPv4(AddrA, AddrB, 6, TCP(1000, 80, 0x02, nil)[:8])
	badDoff := IPv4(AddrA, AddrB, 6, TCP(1000, 80, 0x12, make([]byte, 8)))
	badDoff[20+12] = 2 << 4
	return []MalformedCase{
		{"runt", Ethernet(MACB, MACA, 0x0800, udp)[:40], []string{"runt", "bad_ipv4_length"}},
		{"runt_arp", ARPRequest()[:42], []string{"runt"}},
		{"min_frame", Pad(Ethernet(MACB, MACA, 0x0800, udp), 60), nil},
		{"truncated_ipv4", Ethernet(MACB, MACA, 0x0800, udp[:12]), []string{"runt", "truncated_ipv4"}},
		{"truncated_ipv4_options", Ethernet(MACB, MACA, 0x0800, longIHL), []string{"truncated_ipv4"}},
		{"bad_ipv4_version", Ethernet(MACB, MACA, 0x0800, badVersion), []string{"bad_ipv4_version"}},
		{"ihl_below_5", Ethernet(MACB, MACA, 0x0800, ihl), []string{"bad_ipv4_ihl"}},
		{"truncated_ipv6", Pad(Ethernet(MACB, MACA, 0x86dd, ip6[:30]), 44), []string{"runt", "truncated_ipv6"}},
		{"truncated_tcp", Pad(Ethernet(MACB, MACA, 0x0800, truncTCP), 60), []string{"truncated_tcp"}},
		{"bad_tcp_offset", Ethernet(MACB, MACA, 0x0800, badDoff), []string{"bad_tcp_offset"}},
		{"truncated_tcp_runt", Ethernet(MACB, MACA, 0x0800, tcp[:30]), []string{"runt", "bad_ipv4_length"}},
		{"four_vlans", VLAN(Ethernet(MACB, MACA, 0x0800, udp), 10, 20, 30, 40), []string{"too_many_vlans"}},
		{"two_vlans", VLAN(Ethernet(MACB, MACA, 0x0800, udp), 10, 20), nil},
		{"max_size", UDPFrame(1514, 7, 9), nil},
		{"max_size_vlan", VLAN(UDPFrame(1514, 7, 9), 100), nil},
	}
}
