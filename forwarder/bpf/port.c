//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// ncpos port programs: one instance per segment port (port_index is set at
// load time, so every lookup below is into a fixed array slot).
//
//   port_forward  forward mode: count, check the frame, redirect it to the
//                 segment peer through the egress DEVMAP, unmodified.
//   port_service  service mode: the same plus a 5-tuple flow table (LRU,
//                 a value per CPU: no atomic on a frame's path).
//   port_xsk      afxdp engine: count, check the frame and hand it to the
//                 AF_XDP socket of its receive queue.
//   redirect_err  tracepoint xdp:xdp_redirect_err: a redirect the kernel
//                 refused after the program returned (frame too big for the
//                 peer's MTU, a peer without XDP transmit, a peer down).
//   port_capture  a capture: the port programs of the ports it watches
//                 end in it (a tail call) while it runs.
//
// Capture: while a port's slot in `capturing` is set, its program leaves
// its verdict in capture_verdict and ends with a tail call into the
// capture's program in capture_progs, so a port that nobody captures pays
// a lookup and a branch per frame. port_capture runs the frame through
// the capture's filter (capture_filter, whose body forwarderd writes from
// the filter the operator gave) and a rate cap into the capture's own
// ring, with its port, verdict and time, and returns the verdict: a
// redirect the port program asked for is still pending, as the kernel
// keeps it per CPU until the last program returns. Tail calls, not
// freplace: kernels that refuse trampolines still run them.
//
// An untagged LLDP frame (IEEE 802.1AB) to one of LLDP's group addresses
// is forwarded like any other, and copied (LLDP_MAX bytes at most) to the
// lldp_frames ring for forwarderd, which shows each port's neighbour: the
// box reads LLDP and never sends it. A sender forwarderd keeps as a
// neighbour (lldp_known) is copied at most once every LLDP_SENDER_GAP_NS;
// the others share one copy every LLDP_GAP_NS per port, so a flood costs
// little, and no sender, however many frames it makes up, crowds out the
// neighbours the port already has.
//
// All three are frags-aware (xdp.frags): a jumbo frame
// arrives in several buffers, of which only the first is parsed (headers
// are never past it) while lengths are checked against the whole frame.
// Every program of an engine is built alike: the kernel holds a devmap and
// a program array to the kind of the first program that uses it.
//
// The whole frame's length takes a helper call (bpf_xdp_get_buff_len), 6
// of the 13 ns per frame that port_forward costs beyond a bare redirect.
// A forward or afxdp port whose MTU is at most the default (1522,
// one_buffer; forwarderd says why not service) takes the first buffer's
// length instead: drivers size their receive buffers for the MTU, and
// split only frames longer than a page can hold, so there the first
// buffer is the frame. Should a driver split one all the same, a length
// check that fails asks the helper before it calls the frame malformed,
// and the frame's bytes are then counted whole. Such a frame that no
// length check asked about (not IP, an IP packet that ends in the first
// buffer, or a check that stopped before the length) is counted by its
// first buffer.
//
// Frames the peer's driver does not take when the redirect queue is
// flushed are not counted here: a tracepoint on every flush would cost
// every frame. forwarderd counts them from the interface counters (the
// peer's tx_dropped where its driver counts them, egress_lost where not).
//
// Malformed frames are counted and still forwarded: the box is a wire, and a
// bypass relay would pass them too, so dropping them would make "normal" and
// "bypass" behave differently. The reason numbers are mirrored in
// forwarder/reasons.go.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_PORTS 64
#define MAX_VLANS 2      /* 802.1Q, and 802.1ad QinQ: more is malformed */
#define MAX_IPV6_EXT 4   /* extension headers walked before giving up */
#define MIN_FRAME 60     /* Ethernet minimum without FCS */
#define LLDP_MAX 1518    /* bytes of an LLDP frame copied: a whole LLDPDU under a tag */
#define LLDP_GAP_NS 20000000ULL /* unknown senders: one copy per 20 ms per port */
#define LLDP_SENDER_GAP_NS 100000000ULL /* a known sender: one copy per 100 ms (802.1AB sends at most one a second) */
#define LLDP_SENDERS (MAX_PORTS * 16) /* lldp.MaxPerPort neighbours on each port */
#define CAPTURE_MAX 16384 /* bytes of a frame a capture keeps at most: a jumbo frame whole */

enum malformed {
	MAL_RUNT,
	MAL_TRUNCATED_VLAN,
	MAL_TOO_MANY_VLANS,
	MAL_TRUNCATED_IPV4,
	MAL_BAD_IPV4_VERSION,
	MAL_BAD_IPV4_IHL,
	MAL_BAD_IPV4_LENGTH,
	MAL_TRUNCATED_IPV6,
	MAL_BAD_IPV6_VERSION,
	MAL_BAD_IPV6_LENGTH,
	MAL_TRUNCATED_IPV6_EXT,
	MAL_TRUNCATED_TCP,
	MAL_BAD_TCP_OFFSET,
	MAL_TRUNCATED_UDP,
	MAL_TRUNCATED_ICMP,
	MAL_MAX,
};

enum drop {
	DROP_NO_PEER,   /* egress slot empty: redirect refused */
	DROP_NO_SOCKET, /* afxdp: no socket on this queue */
	DROP_REDIRECT_TOO_BIG,     /* longer than the peer's MTU allows */
	DROP_REDIRECT_UNSUPPORTED, /* the peer's driver cannot transmit XDP frames */
	DROP_REDIRECT_PEER_DOWN,   /* the peer is down */
	DROP_REDIRECT_FAILED,      /* any other refusal */
	DROP_MAX,
};

struct port_stats {
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 passed;     /* handed on: redirected to the peer or to a socket */
	__u64 malformed;  /* frames with at least one malformation */
	__u64 drop[DROP_MAX];
	__u64 reason[MAL_MAX];
};

struct flow_key {
	__u8 port;
	__u8 proto;
	__u8 family; /* 4 or 6 */
	__u8 pad;
	__be16 sport; /* ICMP: identifier */
	__be16 dport; /* ICMP: type << 8 | code */
	__u32 src[4];
	__u32 dst[4];
};

/* One CPU's share of a flow: forwarderd sums the CPUs' (first_seen the
 * least of those with packets, last_seen the greatest). */
struct flow {
	__u64 packets;
	__u64 bytes;
	__u64 first_seen; /* flow_clock, ns */
	__u64 last_seen;
	__u32 tcp_flags;  /* OR of every TCP flag byte seen */
	__u32 pad;
};

struct flow_counters {
	__u64 created;       /* new entries inserted */
	__u64 insert_failed; /* the table refused an insert */
};

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} egress SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, struct port_stats);
} port_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 1000000); /* set from the configuration at load */
	__type(key, struct flow_key);
	__type(value, struct flow);
} flows SEC(".maps");

/* The flow table's clock: CLOCK_MONOTONIC_COARSE in ns, which forwarderd
 * writes every 100 ms. Reading it is a load; a helper call per frame cost
 * more than the whole flow update. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} flow_clock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flow_counters);
} flow_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

/* Which port slot an XDP program serves (by program ID), for the
 * tracepoint, which sees every XDP program on the box. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} prog_slots SEC(".maps");

/* LLDP frames for forwarderd: a few a minute per port, so a small ring;
 * one that is full loses the copy, never the frame. */
struct lldp_copy {
	__u32 ifindex; /* the port it entered */
	__u32 len;     /* of the frame; the copy holds at most LLDP_MAX */
	__u8 data[LLDP_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} lldp_frames SEC(".maps");

/* The senders of the neighbours forwarderd keeps, by the interface their
 * frames enter and their source address; the value is when one was last
 * copied. */
struct lldp_sender {
	__u32 ifindex;
	__u8 mac[6];
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LLDP_SENDERS);
	__type(key, struct lldp_sender);
	__type(value, __u64);
} lldp_known SEC(".maps");

/* Which port slots a capture watches, and the capture's program for each. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} capturing SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} capture_progs SEC(".maps");

/* What the port program decided, for the capture it tail-calls. */
struct capture_verdict {
	__u32 act;
	__u32 drop;      /* enum drop when act dropped it, else DROP_MAX */
	__u32 malformed; /* bit mask of enum malformed */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_verdict);
} capture_verdicts SEC(".maps");

/* A captured frame as forwarderd reads it from the capture's ring. */
struct capture_hdr {
	__u64 time_ns;   /* CLOCK_MONOTONIC */
	__u32 ifindex;   /* the port it entered */
	__u32 len;       /* of the whole frame */
	__u32 caplen;    /* bytes that follow */
	__u32 act;       /* the program's XDP verdict */
	__u32 drop;      /* enum drop when act dropped it, else DROP_MAX */
	__u32 malformed; /* bit mask of enum malformed */
	__u32 queue;     /* receive queue */
	__u32 pad;
};

struct capture_rec {
	struct capture_hdr h;
	__u8 data[CAPTURE_MAX];
};

/* One capture's counters, per CPU: each frame adds to them, and CPUs
 * sharing one cache line at line rate would slow the segment. */
struct capture_state {
	__u64 seen;      /* frames the hook saw */
	__u64 matched;   /* frames the filter kept */
	__u64 over_rate; /* matched, lost to the rate cap */
	__u64 ring_full; /* matched, lost because forwarderd fell behind */
	__u64 captured;  /* handed to forwarderd */
};

/* The capture's rate cap, shared by the CPUs: only frames the filter kept
 * and the cap lets through add to it. */
struct capture_window {
	__u64 start_ns; /* start of the current second */
	__u64 frames;   /* frames kept in it */
	__u64 bytes;    /* bytes kept in it */
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024); /* set per capture */
} capture_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_state);
} capture_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_window);
} capture_windows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_rec);
} capture_scratch SEC(".maps");

/* Set per capture before loading. */
const volatile __u32 capture_snaplen = CAPTURE_MAX;
const volatile __u64 capture_max_frames = 0; /* per second, 0: no cap */
const volatile __u64 capture_max_bytes = 0;  /* per second, 0: no cap */

/* When this port last copied an LLDP frame (each instance has its own;
 * CPUs racing on it copy one frame more, no harm). */
__u64 lldp_last_ns = 0;

/* Set per instance before loading. */
const volatile __u32 port_index = 0;
/* 1: the port's MTU is at most the default, and its frames arrive in one
 * buffer (see the top of this file). */
const volatile __u32 one_buffer = 0;
/* 0 leaves the capture hook out of the program altogether (the verifier
 * drops what a constant rules out): the bench's "no capture hook". */
const volatile __u32 capture_support = 1;

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct parsed {
	__u32 malformed; /* bit mask of enum malformed */
	__u32 tcp_flags;
	int has_key;
	int lldp; /* an untagged LLDP frame */
};

/* len16 reads a 16-bit length field. The appliance's 6.12 verifier loses
 * the bounds of a byte swap and then refuses pointer arithmetic with the
 * result ("unbounded min value"); an AND that the compiler cannot fold away
 * (hence the empty asm) gives the bounds back. Newer verifiers do not need
 * it, which is why the lab on a newer host kernel did not catch it. */
static __always_inline __u32 len16(__be16 v)
{
	__u32 x = bpf_ntohs(v);
	asm volatile("" : "+r"(x));
	return x & 0xffff;
}

static __always_inline void set_bit(struct parsed *p, int reason)
{
	p->malformed |= 1u << reason;
}

/* frame_len is the frame's length: the first buffer's where the port's
 * frames arrive in one, else the whole frame's. */
static __always_inline __u64 frame_len(struct xdp_md *ctx)
{
	if (one_buffer)
		return (__u64)((long)ctx->data_end - (long)ctx->data);
	return bpf_xdp_get_buff_len(ctx);
}

/* whole is the whole frame's length, asked of the kernel where frame_len
 * took the first buffer's: a check that fails on that length is checked
 * again on this one before the frame is called malformed. */
static __always_inline __u64 whole(struct xdp_md *ctx, __u64 *len)
{
	if (one_buffer)
		*len = bpf_xdp_get_buff_len(ctx);
	return *len;
}

/* parse_l4 fills ports from the transport header at l4, or records why it
 * could not. l3end is where the IP packet ends by its own length (padding
 * of short frames is not transport header); end is data_end, checked too
 * because the verifier learns bounds only from it. */
static __always_inline void parse_l4(void *l4, void *l3end, void *end, __u8 proto,
				     struct flow_key *k, struct parsed *p, const int want_key)
{
	switch (proto) {
	case IPPROTO_TCP: {
		struct tcphdr *th = l4;
		if ((void *)(th + 1) > l3end || (void *)(th + 1) > end) {
			set_bit(p, MAL_TRUNCATED_TCP);
			return;
		}
		if (th->doff < 5) {
			set_bit(p, MAL_BAD_TCP_OFFSET);
			return;
		}
		if (want_key) {
			k->sport = th->source;
			k->dport = th->dest;
			p->tcp_flags = ((__u8 *)th)[13];
		}
		return;
	}
	case IPPROTO_UDP: {
		struct udphdr *uh = l4;
		if ((void *)(uh + 1) > l3end || (void *)(uh + 1) > end) {
			set_bit(p, MAL_TRUNCATED_UDP);
			return;
		}
		if (want_key) {
			k->sport = uh->source;
			k->dport = uh->dest;
		}
		return;
	}
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6: {
		__u8 *ic = l4;
		if ((void *)(ic + 8) > l3end || (void *)(ic + 8) > end) {
			set_bit(p, MAL_TRUNCATED_ICMP);
			return;
		}
		if (want_key) {
			k->dport = bpf_htons(((__u16)ic[0] << 8) | ic[1]);
			/* Echo request/reply: the identifier tells sessions apart. */
			if ((proto == IPPROTO_ICMP && (ic[0] == 8 || ic[0] == 0)) ||
			    (proto == IPPROTO_ICMPV6 && (ic[0] == 128 || ic[0] == 129)))
				k->sport = *(__be16 *)(ic + 4);
		}
		return;
	}
	}
}

/* parse checks the frame and, when want_key is set, builds its flow key.
 * It never reads past data_end; it stops at the first structural error. */
static __always_inline void parse(struct xdp_md *ctx, __u64 *len, struct flow_key *k,
				  struct parsed *p, const int want_key)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *cur;
	__be16 proto;
	/* *len is the frame's length (frame_len), which whole makes the
	 * whole frame's: lengths are checked against it, headers against end
	 * (the first buffer). */

	if (*len < MIN_FRAME && whole(ctx, len) < MIN_FRAME)
		set_bit(p, MAL_RUNT);
	if ((void *)(eth + 1) > end)
		return; /* XDP never hands us less than 14 bytes */
	proto = eth->h_proto;
	cur = eth + 1;

#pragma unroll
	for (int i = 0; i <= MAX_VLANS; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if (i == MAX_VLANS) {
			set_bit(p, MAL_TOO_MANY_VLANS);
			return;
		}
		struct vlan_hdr *vh = cur;
		if ((void *)(vh + 1) > end) {
			set_bit(p, MAL_TRUNCATED_VLAN);
			return;
		}
		proto = vh->proto;
		cur = vh + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = cur;
		if ((void *)(iph + 1) > end) {
			set_bit(p, MAL_TRUNCATED_IPV4);
			return;
		}
		if (iph->version != 4) {
			set_bit(p, MAL_BAD_IPV4_VERSION);
			return;
		}
		if (iph->ihl < 5) {
			set_bit(p, MAL_BAD_IPV4_IHL);
			return;
		}
		__u32 hlen = iph->ihl * 4;
		if (cur + hlen > end) {
			set_bit(p, MAL_TRUNCATED_IPV4);
			return;
		}
		__u32 tot_len = len16(iph->tot_len);
		__u32 l3off = cur - data;
		if (tot_len < hlen || (l3off + tot_len > *len && l3off + tot_len > whole(ctx, len))) {
			set_bit(p, MAL_BAD_IPV4_LENGTH);
			return;
		}
		if (want_key) {
			k->family = 4;
			k->proto = iph->protocol;
			k->src[0] = iph->saddr;
			k->dst[0] = iph->daddr;
			p->has_key = 1;
		}
		/* Later fragments carry no transport header. */
		if (iph->frag_off & bpf_htons(0x1fff))
			return;
		void *l3end = end;
		if (l3off + tot_len <= (__u32)(end - data))
			l3end = cur + tot_len; /* else the packet goes on past the first buffer */
		parse_l4(cur + hlen, l3end, end, iph->protocol, k, p, want_key);
		return;
	}

	if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = cur;
		if ((void *)(ip6 + 1) > end) {
			set_bit(p, MAL_TRUNCATED_IPV6);
			return;
		}
		if (ip6->version != 6) {
			set_bit(p, MAL_BAD_IPV6_VERSION);
			return;
		}
		__u8 nexthdr = ip6->nexthdr;
		void *l3end = end;
		__u32 plen = len16(ip6->payload_len);
		if (plen) { /* 0: a jumbogram, sized by hop-by-hop option */
			__u32 payoff = (void *)(ip6 + 1) - data;
			if (payoff + plen > *len && payoff + plen > whole(ctx, len)) {
				set_bit(p, MAL_BAD_IPV6_LENGTH);
				return;
			}
			if (payoff + plen <= (__u32)(end - data))
				l3end = (void *)(ip6 + 1) + plen;
		}
		if (want_key) {
			k->family = 6;
			__builtin_memcpy(k->src, &ip6->saddr, 16);
			__builtin_memcpy(k->dst, &ip6->daddr, 16);
			p->has_key = 1;
		}
		cur = ip6 + 1;
#pragma unroll
		for (int i = 0; i < MAX_IPV6_EXT; i++) {
			__u8 *ext = cur;
			if (nexthdr != IPPROTO_HOPOPTS && nexthdr != IPPROTO_ROUTING &&
			    nexthdr != IPPROTO_DSTOPTS && nexthdr != IPPROTO_FRAGMENT &&
			    nexthdr != IPPROTO_AH)
				break;
			if ((void *)(ext + 8) > l3end || (void *)(ext + 8) > end) {
				set_bit(p, MAL_TRUNCATED_IPV6_EXT);
				return;
			}
			if (nexthdr == IPPROTO_FRAGMENT) {
				__u32 off = len16(*(__be16 *)(ext + 2)) & 0xfff8;
				nexthdr = ext[0];
				cur = ext + 8;
				if (off) {
					if (want_key)
						k->proto = nexthdr;
					return;
				}
				continue;
			}
			__u32 len = nexthdr == IPPROTO_AH ? ((__u32)ext[1] + 2) * 4 : ((__u32)ext[1] + 1) * 8;
			nexthdr = ext[0];
			cur = ext + len;
		}
		if (want_key)
			k->proto = nexthdr;
		parse_l4(cur, l3end, end, nexthdr, k, p, want_key);
		return;
	}
	/* LLDP's group addresses: nearest bridge (0e), nearest non-TPMR
	 * bridge (03), nearest customer bridge (00). */
	if (proto == bpf_htons(ETH_P_LLDP) && cur == (void *)(eth + 1) && eth->h_dest[0] == 0x01 &&
	    eth->h_dest[1] == 0x80 && eth->h_dest[2] == 0xc2 && eth->h_dest[3] == 0 && eth->h_dest[4] == 0 &&
	    (eth->h_dest[5] == 0x0e || eth->h_dest[5] == 0x03 || eth->h_dest[5] == 0x00))
		p->lldp = 1;
	/* ARP and any other EtherType: nothing to check; service mode keys
	 * nothing (no addresses we know how to read). */
}

/* copy_lldp hands a copy of an LLDP frame to forwarderd: a known
 * sender's at its own pace, the others' within the port's budget. */
static __always_inline void copy_lldp(struct xdp_md *ctx, __u64 len)
{
	__u64 now = bpf_ktime_get_coarse_ns();
	struct lldp_sender who = { .ifindex = ctx->ingress_ifindex };
	if (bpf_xdp_load_bytes(ctx, 6, who.mac, sizeof(who.mac)) < 0)
		return;
	__u64 *last = bpf_map_lookup_elem(&lldp_known, &who);
	if (last) {
		if (now - *last < LLDP_SENDER_GAP_NS)
			return;
		*last = now;
	} else {
		if (now - lldp_last_ns < LLDP_GAP_NS)
			return;
		lldp_last_ns = now;
	}
	struct lldp_copy *c = bpf_ringbuf_reserve(&lldp_frames, sizeof(*c), 0);
	if (!c)
		return;
	/* Bounded where the verifier sees it: the empty asm keeps the
	 * compiler from folding the bound into what the verifier cannot
	 * follow (as len16 does). */
	__u64 n = len;
	asm volatile("" : "+r"(n));
	if (n > LLDP_MAX)
		n = LLDP_MAX;
	c->ifindex = ctx->ingress_ifindex;
	c->len = len;
	if (n < 14 || bpf_xdp_load_bytes(ctx, 0, c->data, n) < 0) {
		bpf_ringbuf_discard(c, 0);
		return;
	}
	bpf_ringbuf_submit(c, 0);
}

/* capture hands a frame and its verdict to a capture of this port, if
 * one runs: the capture's program returns act in this program's place.
 * Without one, or if the tail call fails, act is returned here. */
static __always_inline int capture(struct xdp_md *ctx, int act, __u32 drop, __u32 malformed)
{
	if (!capture_support)
		return act;
	__u32 idx = port_index;
	__u32 *on = bpf_map_lookup_elem(&capturing, &idx);
	if (!on || !*on)
		return act;
	__u32 zero = 0;
	struct capture_verdict *v = bpf_map_lookup_elem(&capture_verdicts, &zero);
	if (!v)
		return act;
	v->act = act;
	v->drop = drop;
	v->malformed = malformed;
	bpf_tail_call(ctx, &capture_progs, idx);
	return act;
}

/* count_rx counts the frame in, after parse has settled its length. */
static __always_inline struct port_stats *count_rx(__u64 len)
{
	__u32 idx = port_index;
	struct port_stats *st = bpf_map_lookup_elem(&port_counts, &idx);
	if (st) {
		st->rx_packets++;
		st->rx_bytes += len;
	}
	return st;
}

static __always_inline void count_malformed(struct port_stats *st, __u32 mask)
{
	if (!mask || !st)
		return;
	st->malformed++;
#pragma unroll
	for (int i = 0; i < MAL_MAX; i++)
		if (mask & (1u << i))
			st->reason[i]++;
}

static __always_inline int redirect(struct port_stats *st)
{
	int act = bpf_redirect_map(&egress, port_index, XDP_DROP);
	if (st) {
		if (act == XDP_REDIRECT)
			st->passed++;
		else
			st->drop[DROP_NO_PEER]++;
	}
	return act;
}

SEC("xdp.frags")
int port_forward(struct xdp_md *ctx)
{
	__u64 len = frame_len(ctx);
	struct parsed p = {};
	parse(ctx, &len, NULL, &p, 0);
	struct port_stats *st = count_rx(len);
	count_malformed(st, p.malformed);
	if (p.lldp)
		copy_lldp(ctx, len);
	int act = redirect(st);
	return capture(ctx, act, act == XDP_REDIRECT ? DROP_MAX : DROP_NO_PEER, p.malformed);
}

/* track counts the frame into its flow: this CPU's share of it, so no
 * other CPU writes what it writes. */
static __always_inline void track(struct flow_key *k, struct parsed *p, __u64 len)
{
	__u32 zero = 0;
	__u64 *clock = bpf_map_lookup_elem(&flow_clock, &zero);
	__u64 now = clock ? *clock : 0;
	struct flow *f = bpf_map_lookup_elem(&flows, k);
	if (!f) {
		struct flow nf = {
			.packets = 1,
			.bytes = len,
			.first_seen = now,
			.last_seen = now,
			.tcp_flags = p->tcp_flags,
		};
		struct flow_counters *fc = bpf_map_lookup_elem(&flow_counts, &zero);
		/* Sets this CPU's share; the others start at zero. */
		if (bpf_map_update_elem(&flows, k, &nf, BPF_NOEXIST) == 0) {
			if (fc)
				fc->created++;
			return;
		}
		/* Another CPU inserted it first, or the table refused. */
		f = bpf_map_lookup_elem(&flows, k);
		if (!f) {
			if (fc)
				fc->insert_failed++;
			return;
		}
	}
	if (!f->packets)
		f->first_seen = now; /* the flow's first frame on this CPU */
	f->packets++;
	f->bytes += len;
	if (f->last_seen != now)
		f->last_seen = now;
	f->tcp_flags |= p->tcp_flags;
}

SEC("xdp.frags")
int port_service(struct xdp_md *ctx)
{
	__u64 len = frame_len(ctx);
	struct flow_key k = {};
	struct parsed p = {};
	parse(ctx, &len, &k, &p, 1);
	struct port_stats *st = count_rx(len);
	count_malformed(st, p.malformed);
	if (p.lldp)
		copy_lldp(ctx, len);
	if (p.has_key) {
		k.port = port_index;
		track(&k, &p, len);
	}
	int act = redirect(st);
	return capture(ctx, act, act == XDP_REDIRECT ? DROP_MAX : DROP_NO_PEER, p.malformed);
}

SEC("xdp.frags")
int port_xsk(struct xdp_md *ctx)
{
	__u64 len = frame_len(ctx);
	/* Checked here, as port_forward does, so that both engines count
	 * malformations with the same code and the workers parse only in
	 * service mode. */
	struct parsed p = {};
	parse(ctx, &len, NULL, &p, 0);
	struct port_stats *st = count_rx(len);
	count_malformed(st, p.malformed);
	if (p.lldp)
		copy_lldp(ctx, len);
	int act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_DROP);
	if (st) {
		if (act == XDP_REDIRECT)
			st->passed++;
		else
			st->drop[DROP_NO_SOCKET]++;
	}
	return capture(ctx, act, act == XDP_REDIRECT ? DROP_MAX : DROP_NO_SOCKET, p.malformed);
}

/* capture_filter is the capture's filter: forwarderd replaces its body
 * with the operator's filter (package xdpfilter) before loading. As
 * written here it keeps every frame whole. It returns how many bytes of
 * the frame to keep, 0 for none. */
static __attribute__((noinline)) __u32 capture_filter(void *data, void *end, __u32 len)
{
	__u32 r = 262144;
	asm volatile("" : "+r"(r) : "r"(data), "r"(end), "r"(len));
	return r;
}

/* over_cap counts a kept frame against the capture's rate cap, or says it
 * is over: over the cap it only reads the window. CPUs racing at a
 * second's turn may let a frame or two more through: a cap, not an
 * account. */
static __always_inline int over_cap(__u64 bytes)
{
	__u32 zero = 0;
	struct capture_window *w = bpf_map_lookup_elem(&capture_windows, &zero);
	if (!w)
		return 1;
	__u64 now = bpf_ktime_get_coarse_ns();
	if (now - w->start_ns >= 1000000000ULL) {
		w->start_ns = now;
		w->frames = 0;
		w->bytes = 0;
	}
	if ((capture_max_frames && w->frames >= capture_max_frames) ||
	    (capture_max_bytes && w->bytes + bytes > capture_max_bytes))
		return 1;
	__sync_fetch_and_add(&w->frames, 1);
	__sync_fetch_and_add(&w->bytes, bytes);
	return 0;
}

/* capture_frame runs a frame through the capture: filter, rate cap, ring. */
static __always_inline void capture_frame(struct xdp_md *ctx, __u32 act, __u32 drop, __u32 malformed)
{
	__u32 zero = 0;
	struct capture_state *s = bpf_map_lookup_elem(&capture_counts, &zero);
	if (!s)
		return;
	s->seen++;
	__u64 len = bpf_xdp_get_buff_len(ctx);
	__u32 keep = capture_filter((void *)(long)ctx->data, (void *)(long)ctx->data_end, len);
	if (!keep)
		return;
	s->matched++;
	__u64 n = len;
	if (n > keep)
		n = keep;
	if (n > capture_snaplen)
		n = capture_snaplen;
	asm volatile("" : "+r"(n));
	if (n > CAPTURE_MAX)
		n = CAPTURE_MAX;
	if (over_cap(n)) {
		s->over_rate++;
		return;
	}
	struct capture_rec *r = bpf_map_lookup_elem(&capture_scratch, &zero);
	if (!r)
		return;
	r->h.time_ns = bpf_ktime_get_ns();
	r->h.ifindex = ctx->ingress_ifindex;
	r->h.len = len;
	r->h.caplen = n;
	r->h.act = act;
	r->h.drop = drop;
	r->h.malformed = malformed;
	r->h.queue = ctx->rx_queue_index;
	r->h.pad = 0;
	if (n > 0 && bpf_xdp_load_bytes(ctx, 0, r->data, n) < 0)
		return;
	if (bpf_ringbuf_output(&capture_ring, r, sizeof(r->h) + n, 0) < 0) {
		s->ring_full++;
		return;
	}
	s->captured++;
}

SEC("xdp.frags")
int port_capture(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct capture_verdict *v = bpf_map_lookup_elem(&capture_verdicts, &zero);
	if (!v)
		return XDP_DROP; /* cannot happen: the port program just wrote it */
	__u32 act = v->act;
	capture_frame(ctx, act, v->drop, v->malformed);
	return act;
}

/* The tracepoints' records, as /sys/kernel/tracing/events/xdp/<event>/format
 * lays them out (the first 8 bytes are the common fields); forwarderd
 * checks the format before attaching. */
struct redirect_err_args {
	__u64 common;
	int prog_id;
	__u32 act;
	int ifindex;
	int err;
	int to_ifindex;
	__u32 map_id;
	int map_index;
};

#define E_NXIO 6
#define E_NETDOWN 100
#define E_MSGSIZE 90
#define E_OPNOTSUPP 95

static __always_inline struct port_stats *slot_stats(void *slots, __u32 key)
{
	__u32 *slot = bpf_map_lookup_elem(slots, &key);
	if (!slot)
		return NULL;
	__u32 idx = *slot;
	return bpf_map_lookup_elem(&port_counts, &idx);
}

SEC("tracepoint/xdp/xdp_redirect_err")
int redirect_err(struct redirect_err_args *a)
{
	/* By program: each port has its own instance, and program IDs are
	 * unique on the box, whatever namespace the port is in. */
	struct port_stats *st = slot_stats(&prog_slots, (__u32)a->prog_id);
	if (!st)
		return 0;
	switch (-a->err) {
	case E_MSGSIZE:
		st->drop[DROP_REDIRECT_TOO_BIG]++;
		break;
	case E_OPNOTSUPP:
		st->drop[DROP_REDIRECT_UNSUPPORTED]++;
		break;
	case E_NETDOWN:
	case E_NXIO:
		st->drop[DROP_REDIRECT_PEER_DOWN]++;
		break;
	default:
		st->drop[DROP_REDIRECT_FAILED]++;
	}
	return 0;
}

char _license[] SEC("license") = "Dual BSD/GPL";
