package forwarder

import (
	"encoding/binary"
	"net/netip"
)

// FlowKey is a flow's identity: the port it entered and its 5-tuple. For
// ICMP the ports are the echo identifier and type<<8|code; for other
// protocols, and for IP fragments after the first, they are zero and the
// flow is the address pair. Flows are one-way: a TCP connection is two
// flows, one per direction, as an engine sees them on two ports.
type FlowKey struct {
	Port     uint8
	Proto    uint8
	Family   uint8 // 4 or 6
	_        uint8
	Src, Dst [16]byte // IPv4 in the first 4 bytes
	SrcPort  uint16
	DstPort  uint16
}

// SrcAddr returns the source address.
func (k FlowKey) SrcAddr() netip.Addr { return k.addr(k.Src) }

// DstAddr returns the destination address.
func (k FlowKey) DstAddr() netip.Addr { return k.addr(k.Dst) }

func (k FlowKey) addr(b [16]byte) netip.Addr {
	if k.Family == 4 {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16(b)
}

// Parsed is what ParseFrame learns about a frame.
type Parsed struct {
	Malformed uint32  // Mal* bits
	HasKey    bool    // an IPv4 or IPv6 header was found
	Key       FlowKey // valid when HasKey; Port is left zero
	TCPFlags  uint8
}

const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	etherTypeVLAN  = 0x8100
	etherTypeQinQ  = 0x88a8
	maxVLANs       = 2
	maxIPv6Ext     = 4
	minFrame       = 60
	protoICMP      = 1
	protoTCP       = 6
	protoUDP       = 17
	protoICMPv6    = 58
	protoHopByHop  = 0
	protoRouting   = 43
	protoFragment  = 44
	protoAH        = 51
	protoDestOpts  = 60
	ethHeaderBytes = 14
)

// ParseFrame checks an Ethernet frame and extracts its flow key, exactly as
// the BPF programs in bpf/port.c do (the lab tests compare the two), for the
// afxdp engine and its service mode. It never reads past the slice and
// stops at the first structural error.
func ParseFrame(b []byte) Parsed {
	var p Parsed
	if len(b) < minFrame {
		p.Malformed |= MalRunt
	}
	if len(b) < ethHeaderBytes {
		return p
	}
	proto := binary.BigEndian.Uint16(b[12:])
	off := ethHeaderBytes
	for i := 0; i <= maxVLANs; i++ {
		if proto != etherTypeVLAN && proto != etherTypeQinQ {
			break
		}
		if i == maxVLANs {
			p.Malformed |= MalTooManyVLANs
			return p
		}
		if len(b) < off+4 {
			p.Malformed |= MalTruncatedVLAN
			return p
		}
		proto = binary.BigEndian.Uint16(b[off+2:])
		off += 4
	}
	switch proto {
	case etherTypeIPv4:
		p.parseIPv4(b[off:])
	case etherTypeIPv6:
		p.parseIPv6(b[off:])
	}
	return p
}

func (p *Parsed) parseIPv4(b []byte) {
	if len(b) < 20 {
		p.Malformed |= MalTruncatedIPv4
		return
	}
	if b[0]>>4 != 4 {
		p.Malformed |= MalBadIPv4Version
		return
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 {
		p.Malformed |= MalBadIPv4IHL
		return
	}
	if len(b) < ihl {
		p.Malformed |= MalTruncatedIPv4
		return
	}
	total := int(binary.BigEndian.Uint16(b[2:]))
	if total < ihl || total > len(b) {
		p.Malformed |= MalBadIPv4Length
		return
	}
	p.HasKey = true
	p.Key.Family = 4
	p.Key.Proto = b[9]
	copy(p.Key.Src[:4], b[12:16])
	copy(p.Key.Dst[:4], b[16:20])
	if binary.BigEndian.Uint16(b[6:])&0x1fff != 0 {
		return // a later fragment: no transport header
	}
	// What follows the IP packet is padding, not transport header.
	p.parseL4(b[ihl:total], b[9])
}

func (p *Parsed) parseIPv6(b []byte) {
	if len(b) < 40 {
		p.Malformed |= MalTruncatedIPv6
		return
	}
	if b[0]>>4 != 6 {
		p.Malformed |= MalBadIPv6Version
		return
	}
	if plen := int(binary.BigEndian.Uint16(b[4:])); plen != 0 { // 0: jumbogram
		if 40+plen > len(b) {
			p.Malformed |= MalBadIPv6Length
			return
		}
		b = b[:40+plen]
	}
	p.HasKey = true
	p.Key.Family = 6
	copy(p.Key.Src[:], b[8:24])
	copy(p.Key.Dst[:], b[24:40])
	next := b[6]
	b = b[40:]
	for i := 0; i < maxIPv6Ext; i++ {
		if next != protoHopByHop && next != protoRouting && next != protoDestOpts &&
			next != protoFragment && next != protoAH {
			break
		}
		if len(b) < 8 {
			p.Malformed |= MalTruncatedIPv6Ext
			return
		}
		if next == protoFragment {
			offset := binary.BigEndian.Uint16(b[2:]) & 0xfff8
			next = b[0]
			b = b[8:]
			if offset != 0 {
				p.Key.Proto = next
				return
			}
			continue
		}
		n := (int(b[1]) + 1) * 8
		if next == protoAH {
			n = (int(b[1]) + 2) * 4
		}
		next = b[0]
		if n > len(b) {
			// Like the BPF program, which checks only the next
			// header's start: what follows is then "truncated".
			b = nil
		} else {
			b = b[n:]
		}
	}
	p.Key.Proto = next
	p.parseL4(b, next)
}

func (p *Parsed) parseL4(b []byte, proto uint8) {
	switch proto {
	case protoTCP:
		if len(b) < 20 {
			p.Malformed |= MalTruncatedTCP
			return
		}
		if b[12]>>4 < 5 {
			p.Malformed |= MalBadTCPOffset
			return
		}
		p.Key.SrcPort = binary.BigEndian.Uint16(b[0:])
		p.Key.DstPort = binary.BigEndian.Uint16(b[2:])
		p.TCPFlags = b[13]
	case protoUDP:
		if len(b) < 8 {
			p.Malformed |= MalTruncatedUDP
			return
		}
		p.Key.SrcPort = binary.BigEndian.Uint16(b[0:])
		p.Key.DstPort = binary.BigEndian.Uint16(b[2:])
	case protoICMP, protoICMPv6:
		if len(b) < 8 {
			p.Malformed |= MalTruncatedICMP
			return
		}
		p.Key.DstPort = uint16(b[0])<<8 | uint16(b[1])
		if (proto == protoICMP && (b[0] == 8 || b[0] == 0)) ||
			(proto == protoICMPv6 && (b[0] == 128 || b[0] == 129)) {
			p.Key.SrcPort = binary.BigEndian.Uint16(b[4:])
		}
	}
}
