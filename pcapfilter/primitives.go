package pcapfilter

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"golang.org/x/net/bpf"
)

// The EtherTypes the primitives look for.
const (
	etIPv4 = 0x0800
	etARP  = 0x0806
	etRARP = 0x8035
	etIPv6 = 0x86dd
	etMPLS = 0x8847
)

// etherNames are the names "ether proto" takes (pcap-filter(7)).
var etherNames = map[string]uint32{"ip": etIPv4, "ip6": etIPv6, "arp": etARP, "rarp": etRARP,
	"loopback": 0x9000, "decnet": 0x6003, "lat": 0x6004, "sca": 0x6007, "mopdl": 0x6001, "moprc": 0x6002,
	"iso": 0xfe, "stp": 0x42, "netbeui": 0xf0, "atalk": 0x809b, "aarp": 0x80f3, "ipx": 0xe0}

// ipNames are the IP protocol names "proto" takes: those of Debian's
// /etc/protocols that a box may meet, so that a filter means the same on
// the box as on the operator's machine.
var ipNames = map[string]uint32{"ip": 0, "icmp": 1, "igmp": 2, "tcp": 6, "udp": 17, "ipv6": 41,
	"ipv6-route": 43, "ipv6-frag": 44, "gre": 47, "esp": 50, "ah": 51, "ipv6-icmp": 58, "ipv6-nonxt": 59,
	"ipv6-opts": 60, "ospf": 89, "pim": 103, "vrrp": 112, "l2tp": 115, "sctp": 132}

// etherType matches frames whose EtherType, past the vlan tags, is v.
// Inside MPLS there is none: IPv4 and IPv6 are told by the version in
// the bottom label's payload. v up to 1500 is an LLC SAP, as in libpcap.
func (p *parser) etherType(pos int, v uint32) node {
	l := p.lay
	switch {
	case l.labels > 0 && v != etIPv4 && v != etIPv6:
		fail(pos, "only ip and ip6 can be matched inside mpls, not EtherType %#04x", v)
	case l.labels > 0:
		return and(masked(l.nl()-2, 1, 1, 1), masked(l.nl(), 1, 0xf0, map[uint32]uint32{etIPv4: 0x40, etIPv6: 0x60}[v]))
	case v == 0xe0 || v == 0x809b || v == 0x80f3:
		fail(pos, "IPX and AppleTalk (ether proto %#x) are not supported", v)
	case v == 0x06 || v == 0xfe || v == 0xf0: // matched on both DSAP and SSAP
		return and(not(cmp(l.linkType, 2, bpf.JumpGreaterThan, 1500)), eq(l.linkPayload, 2, v<<8|v))
	case v <= 1500:
		return and(not(cmp(l.linkType, 2, bpf.JumpGreaterThan, 1500)), eq(l.linkPayload, 1, v))
	}
	return eq(l.linkType, 2, v)
}

func (p *parser) ipProto(pos int, v uint32) node {
	return and(p.etherType(pos, etIPv4), eq(p.lay.nl()+9, 1, v))
}

// ip6Proto looks at the next header, and past one fragment header.
func (p *parser) ip6Proto(pos int, v uint32) node {
	nl := p.lay.nl()
	return and(p.etherType(pos, etIPv6), or(eq(nl+6, 1, v), and(eq(nl+6, 1, 44), eq(nl+40, 1, v))))
}

// abbrev compiles a protocol keyword standing alone ("tcp", "arp").
func (p *parser) abbrev(t token) node {
	switch t.text {
	case "ip", "ip6", "arp", "rarp", "stp", "iso", "netbeui":
		return p.etherType(t.pos, etherNames[t.text])
	case "tcp", "udp", "sctp", "ah", "esp", "pim":
		return or(p.ipProto(t.pos, ipNames[t.text]), p.ip6Proto(t.pos, ipNames[t.text]))
	case "icmp", "igmp":
		return p.ipProto(t.pos, ipNames[t.text])
	case "igrp":
		return p.ipProto(t.pos, 9)
	case "vrrp", "carp":
		return p.ipProto(t.pos, 112)
	case "icmp6":
		return p.ip6Proto(t.pos, 58)
	}
	fail(t.pos, "expected src, dst, host, proto, broadcast or multicast after %q", t.text)
	return nil
}

// build compiles the primitive that qualifiers q and operand id make.
func (p *parser) build(q quals, id ident) node {
	switch q.kind {
	case "port", "portrange":
		return p.port(q, id)
	case "proto":
		return p.proto(q, id)
	}
	m, isMAC := mac(id.token)
	switch {
	case q.proto == "ether" && !isMAC:
		fail(id.pos, "expected a MAC address after %q, got %q (names are not resolved on the box)", q.word, id.text)
	case q.proto == "ether" && (q.kind == "net" || id.prefix >= 0 || id.mask != nil):
		fail(id.pos, "%q: a MAC address is a host, not a net", id.full)
	case q.proto == "ether":
		return p.ehost(q.dir, m)
	case isMAC:
		fail(id.pos, `%q is a MAC address: match it with "ether host"`, id.text)
	}
	if a, ok := ipv6(id.token); ok {
		return p.net6(q, id, a)
	}
	if v, bits, ok := ipv4(id.token); ok {
		return p.net4(q, id, v, bits, false)
	}
	if v, ok := number(id.token); ok {
		if id.prefix >= 0 || id.mask != nil {
			fail(id.pos, "%q: write the net as a dotted address", id.full)
		}
		return p.net4(q, id, v, 32, true)
	}
	fail(id.pos, "%q: names are not resolved on the box; give an address", id.text)
	return nil
}

// net4 compiles host and net with an IPv4 address: libpcap widens a
// partial dotted address ("10.1") to a net, and a plain number after net
// to the class-style net its leading octets give ("net 10").
func (p *parser) net4(q quals, id ident, v uint32, bits int, isNum bool) node {
	mask := ^uint32(0)
	switch {
	case id.prefix > 32:
		fail(id.pos, "%q: the prefix length must be at most 32", id.full)
	case id.prefix >= 0 || id.mask != nil:
		v <<= 32 - bits
		mask <<= 32 - id.prefix
		if id.mask != nil {
			m, mbits, ok := ipv4(*id.mask)
			if !ok {
				fail(id.mask.pos, `expected a dotted netmask after "mask", got %q`, id.mask.text)
			}
			mask = m << (32 - mbits)
		}
		if v&^mask != 0 {
			fail(id.pos, "%q: non-network bits set", id.full)
		} else if q.kind != "net" {
			fail(id.pos, `%q: a mask is only for "net"`, id.full)
		}
	case isNum && q.kind == "net":
		for v != 0 && v&0xff000000 == 0 {
			v, mask = v<<8, mask<<8
		}
	default:
		v, mask = v<<(32-bits), mask<<(32-bits)
	}
	hostop := func(et, src, dst uint32) node {
		lt := p.etherType(id.pos, et)
		if mask == 0 { // libpcap's optimizer drops a comparison under a zero mask
			return p.dirs(q.dir, func(uint32) node { return lt }, src, dst)
		}
		return p.dirs(q.dir, func(off uint32) node { return and(lt, masked(p.lay.nl()+off, 4, mask, v)) }, src, dst)
	}
	switch q.proto {
	case "":
		if p.lay.labels > 0 {
			return hostop(etIPv4, 12, 16)
		}
		return or(hostop(etIPv4, 12, 16), hostop(etARP, 14, 24), hostop(etRARP, 14, 24))
	case "ip":
		return hostop(etIPv4, 12, 16)
	case "arp", "rarp":
		return hostop(etherNames[q.proto], 14, 24)
	}
	fail(id.pos, "%q cannot qualify the IPv4 address %q", q.proto, id.full)
	return nil
}

// net6 compiles host and net with an IPv6 address.
func (p *parser) net6(q quals, id ident, a netip.Addr) node {
	bits := 128
	if id.prefix >= 0 {
		bits = id.prefix
	}
	switch {
	case id.mask != nil:
		fail(id.mask.pos, `"mask" is for IPv4: write an IPv6 net as address/length`)
	case bits > 128:
		fail(id.pos, "%q: the prefix length must be at most 128", id.full)
	case netip.PrefixFrom(a, bits).Masked().Addr() != a:
		fail(id.pos, "%q: non-network bits set", id.full)
	case q.kind != "net" && bits != 128:
		fail(id.pos, `%q: a prefix length is only for "net"`, id.full)
	case q.proto != "" && q.proto != "ip6":
		fail(id.pos, "%q cannot qualify the IPv6 address %q", q.proto, id.full)
	}
	lt, addr := p.etherType(id.pos, etIPv6), a.As16()
	var mask [16]byte
	for i := range bits {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return p.dirs(q.dir, func(off uint32) node {
		n := lt
		for i := range uint32(4) {
			if m := binary.BigEndian.Uint32(mask[4*i:]); m != 0 {
				n = and(n, masked(p.lay.nl()+off+4*i, 4, m, binary.BigEndian.Uint32(addr[4*i:])))
			}
		}
		return n
	}, 8, 24)
}

// dirs applies a src/dst qualifier: one matches the field at an offset.
func (p *parser) dirs(d string, one func(off uint32) node, src, dst uint32) node {
	switch d {
	case "src":
		return one(src)
	case "dst":
		return one(dst)
	case "and":
		return and(one(src), one(dst))
	}
	return or(one(src), one(dst))
}

// ehost matches MAC addresses: last four bytes first, as libpcap does.
func (p *parser) ehost(d string, mac [6]byte) node {
	return p.dirs(d, func(off uint32) node {
		return and(eq(off+2, 4, binary.BigEndian.Uint32(mac[2:])), eq(off, 2, uint32(binary.BigEndian.Uint16(mac[:]))))
	}, 6, 0)
}

// port compiles port and portrange. libpcap looks for ports in IPv6
// first, in SCTP, TCP and UDP in that order, and in IPv4 only in the
// first fragment.
func (p *parser) port(q quals, id ident) node {
	protos := map[string][]uint32{"": {132, 6, 17}, "tcp": {6}, "udp": {17}, "sctp": {132}}[q.proto]
	if protos == nil {
		fail(id.pos, "%q cannot qualify %s", q.proto, q.word)
	} else if id.prefix >= 0 || id.mask != nil {
		fail(id.pos, "%q: a port takes no mask", id.full)
	}
	lo, ok := number(id.token)
	hi := lo
	if a, b, found := strings.Cut(id.text, "-"); !ok && q.kind == "portrange" && found && !id.escaped {
		t := id.token
		t.text = a
		if lo, ok = number(t); ok {
			t.text = b
			hi, ok = number(t)
		}
	}
	if !ok {
		fail(id.pos, "expected %s after %q, got %q", q.expects(), q.word, id.text)
	} else if max(lo, hi) > 65535 {
		fail(id.pos, "port number %d is greater than 65535", max(lo, hi))
	}
	lo, hi = min(lo, hi), max(lo, hi)
	nl := p.lay.nl()
	match := func(x, a []bpf.Instruction) node {
		if q.kind == "port" {
			return newTest(x, a, bpf.JumpEqual, lo)
		}
		return and(newTest(x, a, bpf.JumpGreaterOrEqual, lo), not(newTest(x, a, bpf.JumpGreaterThan, hi)))
	}
	at6 := func(off uint32) node { return match(nil, ld(nl+40+off, 2)) }
	at4 := func(off uint32) node {
		return match([]bpf.Instruction{bpf.LoadMemShift{Off: nl}}, []bpf.Instruction{bpf.LoadIndirect{Off: nl + off, Size: 2}})
	}
	var b6, b4 []node
	for _, pr := range protos {
		b6 = append(b6, and(eq(nl+6, 1, pr), p.dirs(q.dir, at6, 0, 2)))
		b4 = append(b4, and(eq(nl+9, 1, pr), masked(nl+6, 2, 0x1fff, 0), p.dirs(q.dir, at4, 0, 2)))
	}
	return or(and(p.etherType(id.pos, etIPv6), or(b6...)), and(p.etherType(id.pos, etIPv4), or(b4...)))
}

// proto compiles ether proto, ip proto, ip6 proto and proto.
func (p *parser) proto(q quals, id ident) node {
	v, ok := number(id.token)
	names := map[bool]map[string]uint32{false: ipNames, true: etherNames}[q.proto == "ether"]
	if n, known := names[id.text]; !ok && known {
		v, ok = n, true
	}
	switch {
	case !ok:
		fail(id.pos, "unknown protocol %q", id.text)
	case id.prefix >= 0 || id.mask != nil:
		fail(id.pos, "%q: a protocol takes no mask", id.full)
	}
	switch q.proto {
	case "ether":
		return p.etherType(id.pos, v)
	case "ip":
		return p.ipProto(id.pos, v)
	case "ip6":
		return p.ip6Proto(id.pos, v)
	case "":
		return or(p.ipProto(id.pos, v), p.ip6Proto(id.pos, v))
	}
	fail(id.pos, "%q cannot qualify proto: it carries no other protocol", q.proto)
	return nil
}

// vlanOrMPLS compiles vlan and mpls (t), with the number that may follow,
// and moves the headers after them for the rest of the expression.
func (p *parser) vlanOrMPLS(t token) node {
	nt := p.peek()
	v, has := number(nt)
	if has {
		p.next()
	}
	l := &p.lay
	if t.text == "mpls" {
		if v > 0xfffff {
			fail(nt.pos, "MPLS label %d is greater than 1048575", v)
		}
		n := masked(l.nl()-2, 1, 1, 0) // the label before is not the bottom one
		if l.labels == 0 {
			n = p.etherType(t.pos, etMPLS)
		}
		if has {
			n = and(n, masked(l.nl(), 4, 0xfffff000, v<<12))
		}
		l.mpls, l.labels = l.mpls+4, l.labels+1
		return n
	}
	if l.labels > 0 {
		fail(t.pos, "vlan cannot follow mpls")
	} else if v > 4095 {
		fail(nt.pos, "VLAN ID %d is greater than 4095", v)
	}
	n := or(eq(l.linkType, 2, 0x8100), eq(l.linkType, 2, 0x88a8), eq(l.linkType, 2, 0x9100))
	if has {
		n = and(n, masked(l.linkPayload, 2, 0x0fff, v))
	}
	l.linkType, l.linkPayload = l.linkType+4, l.linkPayload+4
	return n
}

// relations are what less, greater and len's comparisons test, and
// whether they negate it.
var relations = map[string]struct {
	cond   bpf.JumpTest
	negate bool
}{"less": {bpf.JumpGreaterThan, true}, "<=": {bpf.JumpGreaterThan, true}, "greater": {bpf.JumpGreaterOrEqual, false},
	">=": {bpf.JumpGreaterOrEqual, false}, ">": {bpf.JumpGreaterThan, false}, "<": {bpf.JumpGreaterOrEqual, true},
	"=": {bpf.JumpEqual, false}, "==": {bpf.JumpEqual, false}, "!=": {bpf.JumpEqual, true}}

// length compiles less, greater and len compared with a number (t).
func (p *parser) length(t token) node {
	op := t
	if t.text == "len" {
		if op = p.next(); !isOp(op, "<", "<=", ">", ">=", "=", "==", "!=") {
			if op.kind == tOp {
				p.arith(t.pos, op)
			}
			fail(op.pos, `expected a comparison such as "len > 100" after "len", got %s`, describe(op))
		}
	}
	nt := p.next()
	v, ok := number(nt)
	if !ok && t.text == "len" && nt.kind == tWord {
		p.arith(t.pos, nt)
	} else if !ok {
		fail(nt.pos, "expected a length after %q, got %s", t.text, describe(nt))
	}
	p.noArith(t.pos)
	r := relations[op.text]
	n := node(newTest(nil, []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtLen}}, r.cond, v))
	if r.negate {
		n = not(n)
	}
	return n
}

// cast compiles broadcast and multicast (t), after proto if given.
func (p *parser) cast(t token, proto string) node {
	switch {
	case (proto == "" || proto == "ether" || proto == "link") && t.text == "broadcast":
		return p.ehost("dst", [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	case proto == "" || proto == "ether" || proto == "link":
		return masked(0, 1, 1, 1)
	case proto == "ip" && t.text == "multicast":
		return and(p.etherType(t.pos, etIPv4), cmp(p.lay.nl()+16, 1, bpf.JumpGreaterOrEqual, 224))
	case proto == "ip6" && t.text == "multicast":
		return and(p.etherType(t.pos, etIPv6), eq(p.lay.nl()+24, 1, 255))
	}
	fail(t.pos, "%s %s is not supported", proto, t.text)
	return nil
}
