package pcapfilter

// quals are a primitive's qualifiers ("tcp dst port"), which a bare id
// after it reuses.
type quals struct {
	ok    bool   // false where there is nothing for a bare id to reuse
	proto string // "" or the protocol keyword: ether, ip, ip6, arp, tcp, ...
	dir   string // "" (src or dst), "src", "dst" or "and" (src and dst)
	kind  string // "" (host or net, by the address), host, net, port, portrange or proto
	word  string // the last qualifier keyword, for messages
}

// layers are where the headers are for the primitive being compiled: each
// vlan and mpls before it in the expression moves them.
type layers struct {
	linkType    uint32 // the EtherType: 12, plus 4 per vlan
	linkPayload uint32 // what follows the EtherType: 14, plus 4 per vlan
	mpls        uint32 // MPLS labels between that and the network layer
	labels      int    // how many mpls there were
}

// nl is where the network layer (the IP header) starts.
func (l layers) nl() uint32 { return l.linkPayload + l.mpls }

// maxDepth bounds the nesting of parentheses and nots, so that no
// expression can exhaust the stack.
const maxDepth = 256

type parser struct {
	src   string
	toks  []token
	i     int
	lay   layers
	depth int
}

// An ident is the operand of a primitive: a word, with the /length or
// "mask M" that may follow it.
type ident struct {
	token
	prefix int    // after '/', or -1
	mask   *token // after "mask"
	full   string // all of it, for messages
}

var protoKeywords = set("ether", "link", "ip", "ip6", "arp", "rarp", "tcp", "udp", "sctp", "icmp",
	"icmp6", "igmp", "igrp", "pim", "vrrp", "carp", "ah", "esp", "stp", "iso", "netbeui")

// unsupported are the rest of pcap-filter(7)'s keywords.
var unsupported = set("gateway", "protochain", "decnet", "lat", "sca", "moprc", "mopdl", "atalk", "aarp",
	"ipx", "esis", "es-is", "isis", "is-is", "clnp", "l1", "l2", "iih", "lsp", "snp", "csnp", "psnp", "llc",
	"pppoed", "pppoes", "geneve", "inbound", "outbound", "ifindex", "ifname", "on", "rnr", "rulenum",
	"reason", "rset", "ruleset", "srnr", "subrulenum", "action", "type", "subtype", "dir", "wlan", "ra",
	"ta", "addr1", "addr2", "addr3", "addr4", "fddi", "tr", "ppp", "slip", "radio", "lane", "metac", "bcc",
	"oam", "oamf4", "oamf4s", "oamf4e", "sc", "ilmic", "connectmsg", "metaconnect", "vpi", "vci")

var keywords = set("src", "dst", "host", "net", "mask", "port", "portrange", "proto", "vlan", "mpls",
	"less", "greater", "len", "broadcast", "multicast", "and", "or", "not")

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

func isKeyword(t token) bool {
	return t.kind == tWord && !t.escaped && (keywords[t.text] || protoKeywords[t.text] || unsupported[t.text])
}

// is reports whether t is one of words, as a keyword.
func is(t token, words ...string) bool {
	for _, w := range words {
		if t.kind == tWord && !t.escaped && t.text == w {
			return true
		}
	}
	return false
}

func isOp(t token, ops ...string) bool {
	for _, o := range ops {
		if t.kind == tOp && t.text == o {
			return true
		}
	}
	return false
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	p.i = min(p.i+1, len(p.toks)-1)
	return t
}

func describe(t token) string {
	if t.kind == tEOF {
		return "the end of the expression"
	}
	return `"` + t.text + `"`
}

// arith refuses the arithmetic from start to the end of the token last.
func (p *parser) arith(start int, last token) {
	fail(start, "%q arithmetic expressions are not supported", p.src[start:last.pos+len(last.text)])
}

// noArith refuses arithmetic or a comparison after an operand that
// started at start.
func (p *parser) noArith(start int) {
	if s := p.peek(); s.kind == tOp && !isOp(s, "(", ")", "!", "&&", "||") {
		p.arith(start, s)
	}
}

// expr is terms joined by and and or, grouped from the left. prev are the
// qualifiers a bare id at its start reuses; the result's are those a bare
// id after it reuses.
func (p *parser) expr(prev quals) (node, quals) {
	n, q := p.term(prev)
	for {
		t := p.peek()
		if !is(t, "and", "or") && !isOp(t, "&&", "||") {
			return n, q
		}
		p.next()
		var r node
		r, q = p.term(q)
		if is(t, "and") || isOp(t, "&&") {
			n = and(n, r)
		} else {
			n = or(n, r)
		}
	}
}

func (p *parser) term(prev quals) (node, quals) {
	t := p.peek()
	if p.depth++; p.depth > maxDepth {
		fail(t.pos, "the expression nests deeper than %d", maxDepth)
	}
	defer func() { p.depth-- }()
	switch {
	case is(t, "not") || isOp(t, "!"):
		p.next()
		n, q := p.term(prev)
		return not(n), q
	case isOp(t, "("):
		p.next()
		n, _ := p.expr(prev)
		if c := p.next(); !isOp(c, ")") {
			fail(c.pos, `expected ")" to close the "(" at %d, got %s`, t.pos, describe(c))
		}
		return n, prev
	case t.kind == tEOF:
		fail(t.pos, "the expression ends where a primitive was expected")
	case isOp(t, ")", "&&", "||"):
		fail(t.pos, "expected a primitive, got %q", t.text)
	case t.kind == tOp:
		p.arith(t.pos, t)
	case is(t, "and", "or"):
		fail(t.pos, "expected a primitive before %q", t.text)
	case unsupported[t.text] && isKeyword(t):
		fail(t.pos, "%q is not supported", t.text)
	case is(t, "mask"):
		fail(t.pos, `"mask" must follow the address of a net`)
	case !isKeyword(t):
		return p.id(prev), prev
	}
	return p.primitive()
}

// primitive compiles a primitive that starts with a keyword.
func (p *parser) primitive() (node, quals) {
	t := p.next()
	switch w := t.text; {
	case w == "vlan" || w == "mpls":
		return p.vlanOrMPLS(t), quals{}
	case w == "less" || w == "greater" || w == "len":
		return p.length(t), quals{}
	case w == "broadcast" || w == "multicast":
		return p.cast(t, ""), quals{}
	case !protoKeywords[w]:
		p.i-- // a qualifier: src, dst, host, net, port, portrange, proto
		return p.qualified(token{})
	}
	switch nt := p.peek(); {
	case isOp(nt, "["):
		last := nt
		for i := p.i; i < len(p.toks)-1 && !isOp(last, "]"); i++ {
			last = p.toks[i]
		}
		p.arith(t.pos, last)
	case is(nt, "broadcast", "multicast"):
		return p.cast(p.next(), t.text), quals{}
	case is(nt, "src", "dst", "host", "net", "port", "portrange", "proto", "gateway", "protochain"):
		return p.qualified(t)
	}
	return p.abbrev(t), quals{}
}

// qualified is a primitive with qualifiers: [proto] [dir] [kind] id, or
// [proto] proto id; pt is the protocol keyword, if any, already read.
func (p *parser) qualified(pt token) (node, quals) {
	q := quals{ok: true, proto: pt.text, word: pt.text}
	if q.proto == "link" {
		q.proto = "ether"
	}
	t := p.peek()
	if is(t, "src", "dst") {
		q.dir, q.word = p.next().text, t.text
		if op := p.peek(); is(op, "and", "or") && is(p.toks[p.i+1], "src", "dst") && p.toks[p.i+1].text != t.text {
			p.next()
			q.dir, q.word = map[string]string{"or": "", "and": "and"}[op.text], p.next().text
		}
	}
	switch k := p.peek(); {
	case is(k, "proto") && is(t, "src", "dst"):
		fail(k.pos, `"proto" cannot follow src or dst`)
	case is(k, "host", "net", "port", "portrange", "proto"):
		q.kind, q.word = k.text, p.next().text
	case is(k, "gateway", "protochain"):
		fail(k.pos, "%q is not supported", k.text)
	}
	return p.id(q), q
}

// id reads the operand of a primitive and compiles the primitive that q
// and it make.
func (p *parser) id(q quals) node {
	t := p.next()
	if t.kind != tWord || isKeyword(t) {
		if q.kind == "proto" && t.kind == tWord {
			fail(t.pos, `expected a protocol number or name after "proto", got %q (a keyword: write it \%s)`, t.text, t.text)
		}
		fail(t.pos, "expected %s after %q, got %s", q.expects(), q.word, describe(t))
	}
	id := ident{token: t, prefix: -1}
	last := t
	if s := p.peek(); isOp(s, "/") {
		p.next()
		last = p.next()
		v, ok := number(last)
		if !ok {
			fail(last.pos, `expected a prefix length after "/", got %s`, describe(last))
		}
		id.prefix = int(min(v, 1<<16))
	} else if is(s, "mask") {
		p.next()
		if last = p.next(); last.kind != tWord {
			fail(last.pos, `expected a netmask after "mask", got %s`, describe(last))
		}
		id.mask = &last
	}
	p.noArith(t.pos)
	if !q.ok {
		fail(t.pos, "%q needs a qualifier such as host, net, port or proto", t.text)
	}
	id.full = p.src[t.pos : last.pos+len(last.text)]
	return p.build(q, id)
}

// expects names what the qualifiers need as their operand.
func (q quals) expects() string {
	switch {
	case q.kind == "port":
		return "a port number"
	case q.kind == "portrange":
		return "a port range such as 1024-2047"
	case q.kind == "proto":
		return "a protocol number or name"
	case q.proto == "ether":
		return "a MAC address"
	}
	return "an address"
}
