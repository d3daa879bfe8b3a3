// Package forwarder is the ncpos datapath: it bridges the two ports of each
// segment so that every frame entering one leaves the other unmodified.
//
// Two engines do the forwarding:
//
//   - xdp (default): an XDP program per port redirects each frame to the
//     segment peer through a DEVMAP, all in the kernel (bpf/port.c).
//   - afxdp: an XDP program per port hands frames to AF_XDP sockets, one per
//     queue, and Go copies them to the peer's socket (github.com/asavie/xdp,
//     wrapped so that it neither crashes nor leaves programs behind).
//
// and two modes: forward (no per-packet state, the platform's ceiling) and
// service (a 5-tuple flow table with LRU eviction and idle expiry, the cost
// of a NAT or stateful inspection engine).
//
// Programs are attached through BPF links owned by the process, so a killed
// forwarderd leaves nothing attached. Before attaching, the forwarder sets
// queue counts and IRQ affinities so that each forwarding core serves its
// queues (CorePlan). It keeps counters per port and segment, and a health
// verdict: heartbeat, link state, and progress (frames that enter a segment
// leave it).
package forwarder
