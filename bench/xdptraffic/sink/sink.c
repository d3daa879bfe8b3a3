//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The counting sinks, for traffic that needs no stamp: attached to a port
// under a sink id of their own, they count what arrives and drop it.
//
//   sink       an XDP program. A veth drops frames redirected into it
//              unless its peer has an XDP program; this is that program.
//   sink_skb   the same count at tc ingress, for datapaths that transmit
//              socket buffers (see below).
//   capture    the same as sink, and copies each frame into a ring buffer
//              so that tests compare it byte for byte with what was sent.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#define MAX_SINKS 64
#define CAPTURE_BYTES 9216 /* a jumbo frame of the largest MTU a segment takes */

struct sink_stats {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_SINKS);
	__type(key, __u32);
	__type(value, struct sink_stats);
} sink_counts SEC(".maps");

struct record {
	__u32 sink;
	__u32 len;
	__u8 data[CAPTURE_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 26);
} captured SEC(".maps");

const volatile __u32 sink_id = 0;

static __always_inline void count_bytes(__u64 bytes)
{
	__u32 id = sink_id;
	struct sink_stats *s = bpf_map_lookup_elem(&sink_counts, &id);
	if (s) {
		s->packets++;
		s->bytes += bytes;
	}
}

/* Sink and capture are frags-aware, so that they take jumbo frames and
 * count each frame's whole length. */
static __always_inline void count(struct xdp_md *ctx)
{
	count_bytes(bpf_xdp_get_buff_len(ctx));
}

SEC("xdp.frags")
int sink(struct xdp_md *ctx)
{
	count(ctx);
	return XDP_DROP;
}

/* The same count at tc ingress, for frames a datapath transmits as
 * socket buffers (a Linux bridge, AF_XDP in copy mode): with no XDP program
 * on the veth they skip the copy into an XDP buffer that the veth makes for
 * an XDP program, a cost of the harness that a NIC does not have. */
SEC("tc")
int sink_skb(struct __sk_buff *skb)
{
	count_bytes(skb->len);
	return 2; /* TC_ACT_SHOT */
}

SEC("xdp.frags")
int capture(struct xdp_md *ctx)
{
	count(ctx);
	__u32 len = bpf_xdp_get_buff_len(ctx);
	struct record *r = bpf_ringbuf_reserve(&captured, sizeof(*r), 0);
	if (!r)
		return XDP_DROP;
	r->sink = sink_id;
	r->len = len;
	if (len > CAPTURE_BYTES)
		len = CAPTURE_BYTES;
	if (len < 1 || bpf_xdp_load_bytes(ctx, 0, r->data, len) < 0) {
		bpf_ringbuf_discard(r, 0);
		return XDP_DROP;
	}
	bpf_ringbuf_submit(r, 0);
	return XDP_DROP;
}

char _license[] SEC("license") = "Dual BSD/GPL";
