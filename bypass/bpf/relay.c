//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The sim relay (bypass/sim.go): a tc (cls_bpf, direct-action) program on
// the ingress of both ports of a pair, and a one-entry map, its controller.
//
//   normal      frames go on (to XDP's forwarder or the stack);
//   bypass      every frame is redirected out of the other port, which is
//               what a relay joining the two cables does;
//   disconnect  frames are dropped.
//
// The controller's timer: while armed, a frame that arrives in normal past
// the deadline (CLOCK_MONOTONIC, as bpf_ktime_get_ns) latches the expiry
// state and stops the timer (in bypass and disconnect bypassd's readers
// latch it), so that a bypassd that stops kicking leaves a relay
// that falls to bypass on its own. bypassd's readers latch it the same way.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

enum mode {
	MODE_NORMAL = 0,
	MODE_BYPASS = 1,
	MODE_DISCONNECT = 2,
};

struct relay {
	__u32 mode; // enum mode
	__u32 armed;
	__u64 deadline; // CLOCK_MONOTONIC ns
	__u32 if_a, if_b; // ifindexes of the two ports
	__u32 expired; // latched: the timer ran out
	__u32 expiry_mode; // mode to fall to when it does
	__u64 timeout; // ns, reloaded by a kick
	// Instrumentation of the lab relay (no hardware has it): when it first
	// carried a frame since it was last set (0: not yet), and how many
	// frames it has carried in all.
	__u64 first_carried;
	__u64 carried;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct relay);
} ncpos_relay SEC(".maps");

SEC("tc")
int relay_ingress(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct relay *r = bpf_map_lookup_elem(&ncpos_relay, &key);
	if (!r)
		return TC_ACT_OK;
	__u32 mode = r->mode;
	if (mode == MODE_NORMAL && r->armed && bpf_ktime_get_ns() >= r->deadline) {
		mode = r->expiry_mode;
		r->mode = mode;
		r->expired = 1;
		r->armed = 0;
	}
	if (mode == MODE_DISCONNECT)
		return TC_ACT_SHOT;
	if (mode != MODE_BYPASS)
		return TC_ACT_OK;
	if (r->first_carried == 0)
		r->first_carried = bpf_ktime_get_ns();
	__sync_fetch_and_add(&r->carried, 1);
	__u32 out = skb->ifindex == r->if_a ? r->if_b : r->if_a;
	return bpf_redirect(out, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
