//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The lab's own BPF programs, attached only inside lab namespaces:
//
//   sink       on a traffic namespace's end of a port veth: counts what
//              arrives and drops it. A veth drops frames redirected into it
//              unless its peer has an XDP program; this is that program.
//   sink_skb   the same count at tc ingress, for datapaths that transmit
//              socket buffers (see below).
//   capture    the same as sink, and copies each frame into a ring buffer
//              so that tests compare it byte for byte with what was sent.
//   gen        the traffic generator: run with BPF_PROG_RUN in live-frame
//              mode on a traffic end, it transmits its input frame
//              (XDP_TX), optionally cycling the UDP source port over
//              `flows` values so that service mode sees that many flows,
//              and optionally slowed by `spin` empty loop rounds per frame.
//   reference  the minimal devmap redirect the bench compares against.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

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

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ref_egress SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gen_seq SEC(".maps");

const volatile __u32 sink_id = 0;
const volatile __u32 flows = 0;      /* gen: 0 or 1 = leave the frame alone */
const volatile __u32 sport_off = 34; /* gen: offset of the UDP source port */
const volatile __u32 spin = 0;       /* gen: busy-loop iterations per frame */

static long spin_once(__u32 i, void *ctx)
{
	return 0;
}

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

SEC("xdp")
int gen(struct xdp_md *ctx)
{
	/* Throttling frame by frame keeps the offered load smooth, where
	 * pacing whole BPF_PROG_RUN calls would offer it in bursts. */
	if (spin)
		bpf_loop(spin, spin_once, NULL, 0);
	if (flows > 1) {
		void *data = (void *)(long)ctx->data;
		void *end = (void *)(long)ctx->data_end;
		__u32 zero = 0;
		__u32 *seq = bpf_map_lookup_elem(&gen_seq, &zero);
		__u32 off = sport_off;
		if (off > 256)
			return XDP_ABORTED;
		__be16 *sport = data + off;
		if (!seq || (void *)(sport + 1) > end)
			return XDP_ABORTED;
		*seq = *seq + 1 >= flows ? 0 : *seq + 1;
		*sport = bpf_htons(10000 + *seq);
	}
	return XDP_TX;
}

/* Frags-aware like the forwarder's programs, so that a veth whose peer has
 * a jumbo MTU still takes it natively. */
SEC("xdp.frags")
int reference(struct xdp_md *ctx)
{
	return bpf_redirect_map(&ref_egress, 0, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
