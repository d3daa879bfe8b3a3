package frames

import (
	"bytes"
	"encoding/binary"
	"net/netip"
)

// QinQ inserts an 802.1ad service tag (TPID 0x88a8) carrying svid and an
// 802.1Q customer tag (0x8100) carrying cvid after the MAC addresses.
func QinQ(frame []byte, svid, cvid uint16) []byte {
	out := append([]byte(nil), frame[:12]...)
	out = binary.BigEndian.AppendUint16(out, 0x88a8)
	out = binary.BigEndian.AppendUint16(out, svid&0x0fff)
	out = binary.BigEndian.AppendUint16(out, 0x8100)
	out = binary.BigEndian.AppendUint16(out, cvid&0x0fff)
	return append(out, frame[12:]...)
}

// Link-local group addresses of IEEE 802.1 protocols.
var (
	STPGroup   = [6]byte{0x01, 0x80, 0xc2, 0, 0, 0x00} // bridge group: STP BPDUs
	PauseGroup = [6]byte{0x01, 0x80, 0xc2, 0, 0, 0x01} // 802.3x PAUSE
	SlowGroup  = [6]byte{0x01, 0x80, 0xc2, 0, 0, 0x02} // slow protocols: LACP
	LLDPGroup  = [6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}
)

// WireFrames are frames of every kind a cable between two neighbours
// carries and a bump in the wire must pass bit for bit, by name. jumbo
// adds a frame of that many bytes (0: none).
func WireFrames(jumbo int) map[string][]byte {
	ipv4 := func(size int) []byte { return UDPFrame(size, 1000, 2002) }
	out := map[string][]byte{
		"udp_64":      UDPFrame(64, 1000, 2000),
		"udp_1514":    UDPFrame(1514, 1000, 2001),
		"tcp":         Pad(Ethernet(MACB, MACA, 0x0800, IPv4(AddrA, AddrB, 6, TCP(40000, 443, 0x02, nil))), 60),
		"vlan":        VLAN(UDPFrame(100, 1, 2), 42),
		"vlan_1518":   VLAN(ipv4(1514), 42),
		"qinq":        QinQ(UDPFrame(100, 1, 2), 100, 200),
		"qinq_1522":   QinQ(ipv4(1514), 100, 200),           // a 1500-byte packet under two tags
		"qinq_1526":   QinQ(MPLS(ipv4(1514), 16), 100, 200), // and an MPLS label
		"arp":         ARPRequest(),
		"ipv6_nd":     NeighborSolicitation(Addr6A, Addr6B),
		"ipv6_icmp":   Ethernet(MACB, MACA, 0x86dd, IPv6(Addr6A, Addr6B, 58, ICMPEcho(128, 1, 1, make([]byte, 16)))),
		"lldp":        Ethernet(LLDPGroup, MACA, 0x88cc, bytes.Repeat([]byte{0xaa}, 46)),
		"lacp":        LACPDU(),
		"stp":         STPBPDU(),
		"pause":       Pause(0xffff),
		"mpls":        MPLS(ipv4(1000), 16, 17),
		"mpls_vlan":   VLAN(MPLS(ipv4(1000), 16), 42),
		"ethertype_x": Ethernet(MACB, MACA, 0x1234, bytes.Repeat([]byte{0x5a}, 100)),
		"broadcast":   Ethernet([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, MACA, 0x0800, IPv4(AddrA, AddrB, 17, UDP(68, 67, make([]byte, 300)))),
	}
	if jumbo > 0 {
		out["jumbo"] = UDPFrame(jumbo, 1000, 2003)
	}
	return out
}

// MPLS replaces an Ethernet frame's EtherType with MPLS unicast (0x8847)
// and pushes the labels (the last one with bottom of stack, TTL 64) in
// front of its payload.
func MPLS(frame []byte, labels ...uint32) []byte {
	out := append([]byte(nil), frame[:12]...)
	out = binary.BigEndian.AppendUint16(out, 0x8847)
	for i, l := range labels {
		e := l<<12 | 64
		if i == len(labels)-1 {
			e |= 1 << 8
		}
		out = binary.BigEndian.AppendUint32(out, e)
	}
	return append(out, frame[14:]...)
}

// NeighborSolicitation is an ICMPv6 neighbour solicitation from src for
// target, to target's solicited-node multicast group, with the source's
// link-layer address option. Its checksum is correct.
func NeighborSolicitation(src, target netip.Addr) []byte {
	return NeighborSolicitationFrom(MACA, src, target)
}

// NeighborSolicitationFrom is NeighborSolicitation sent from mac.
func NeighborSolicitationFrom(mac [6]byte, src, target netip.Addr) []byte {
	t := target.As16()
	group := netip.AddrFrom16([16]byte{0xff, 0x02, 11: 0x01, 12: 0xff, 13: t[13], 14: t[14], 15: t[15]})
	icmp := make([]byte, 32)
	icmp[0] = 135 // neighbour solicitation
	copy(icmp[8:24], t[:])
	icmp[24], icmp[25] = 1, 1 // source link-layer address, 8 bytes
	copy(icmp[26:32], mac[:])
	binary.BigEndian.PutUint16(icmp[2:], ICMPv6Checksum(src, group, icmp))
	ip := IPv6(src, group, 58, icmp)
	ip[7] = 255 // hop limit, as ND requires
	g := group.As16()
	dst := [6]byte{0x33, 0x33, g[12], g[13], g[14], g[15]}
	return Ethernet(dst, mac, 0x86dd, ip)
}

// LinkLocal is the IPv6 link-local address an interface with mac takes
// (modified EUI-64).
func LinkLocal(mac [6]byte) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfe, 0x80, 8: mac[0] ^ 2, 9: mac[1], 10: mac[2], 11: 0xff, 12: 0xfe, 13: mac[3], 14: mac[4], 15: mac[5]})
}

// TCPSYN is a TCP SYN from src:sport to dst:dport, IPv4 or IPv6 by the
// addresses, with correct checksums, in a frame from srcMAC to dstMAC.
func TCPSYN(dstMAC, srcMAC [6]byte, src, dst netip.Addr, sport, dport uint16) []byte {
	seg := TCP(sport, dport, 0x02, nil)
	s, d := src.AsSlice(), dst.AsSlice()
	pseudo := append(append([]byte(nil), s...), d...)
	if src.Is4() {
		pseudo = append(pseudo, 0, 6, byte(len(seg)>>8), byte(len(seg)))
	} else {
		pseudo = append(pseudo, 0, 0, byte(len(seg)>>8), byte(len(seg)), 0, 0, 0, 6)
	}
	binary.BigEndian.PutUint16(seg[16:], Checksum(append(pseudo, seg...)))
	if src.Is4() {
		return Pad(Ethernet(dstMAC, srcMAC, 0x0800, IPv4(src, dst, 6, seg)), 60)
	}
	return Ethernet(dstMAC, srcMAC, 0x86dd, IPv6(src, dst, 6, seg))
}

// ICMPv6Checksum is the checksum of an ICMPv6 message (whose checksum
// field is zero) between src and dst.
func ICMPv6Checksum(src, dst netip.Addr, msg []byte) uint16 {
	s, d := src.As16(), dst.As16()
	pseudo := append(append(append([]byte(nil), s[:]...), d[:]...), 0, 0, 0, 0, 0, 0, 0, 58)
	binary.BigEndian.PutUint16(pseudo[32:], uint16(len(msg)))
	return Checksum(append(pseudo, msg...))
}

// LACPDU is an 802.3ad LACP data unit (slow protocol subtype 1), 124
// bytes as an actor would send it.
func LACPDU() []byte {
	p := make([]byte, 110)
	p[0], p[1] = 1, 1  // subtype LACP, version 1
	p[2], p[3] = 1, 20 // actor information TLV
	copy(p[6:12], MACA[:])
	p[22], p[23] = 2, 20 // partner information TLV
	p[42], p[43] = 3, 16 // collector information TLV
	return Pad(Ethernet(SlowGroup, MACA, 0x8809, p), 124)
}

// STPBPDU is an IEEE 802.1D configuration BPDU: an 802.3 frame whose
// type field is a length, with an LLC header (DSAP 0x42, SSAP 0x42,
// UI).
func STPBPDU() []byte {
	llc := append([]byte{0x42, 0x42, 0x03}, make([]byte, 35)...)
	return Pad(Ethernet(STPGroup, MACA, uint16(len(llc)), llc), 60)
}

// Pause is an 802.3x PAUSE frame (MAC control opcode 1) asking for quanta
// of pause. A NIC with flow control on acts on it and drops it.
func Pause(quanta uint16) []byte {
	p := make([]byte, 4)
	binary.BigEndian.PutUint16(p[0:], 1)
	binary.BigEndian.PutUint16(p[2:], quanta)
	return Pad(Ethernet(PauseGroup, MACA, 0x8808, p), 60)
}

// LLDP is an LLDP frame (IEEE 802.1AB-2016 clause 8) as Debian's lldpd
// sends one: its chassis by MAC address, its port by name, the TTL in
// seconds (0: it leaves), and its system name.
func LLDP(chassis [6]byte, port, system string, ttl int) []byte {
	var b []byte
	tlv := func(typ int, v []byte) {
		b = binary.BigEndian.AppendUint16(b, uint16(typ)<<9|uint16(len(v)))
		b = append(b, v...)
	}
	tlv(1, append([]byte{4}, chassis[:]...)) // chassis ID, a MAC address
	tlv(2, append([]byte{5}, port...))       // port ID, an interface name
	tlv(3, binary.BigEndian.AppendUint16(nil, uint16(ttl)))
	tlv(5, []byte(system))
	tlv(0, nil)
	return Pad(Ethernet(LLDPGroup, chassis, 0x88cc, b), 60)
}
