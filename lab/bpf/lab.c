//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The lab's own target, attached only inside lab namespaces:
//
//   reference  the minimal devmap redirect the bench compares against.
//
// The lab's traffic (generator, sinks, captures) is the bench's:
// bench/xdptraffic.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ref_egress SEC(".maps");

/* Frags-aware like the forwarder's programs, so that a veth whose peer has
 * a jumbo MTU still takes it natively. */
SEC("xdp.frags")
int reference(struct xdp_md *ctx)
{
	return bpf_redirect_map(&ref_egress, 0, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
