// Package xdpfilter runs a capture filter in the kernel, at the XDP hook:
// it translates a classic BPF program (what pcap filters compile to; see
// package pcapfilter) into an eBPF function that reads the frame through
// XDP's packet pointers, so that frames a capture does not want never
// leave the kernel.
//
// The kernel's own translation of classic BPF (for socket filters) works
// on socket buffers, which XDP does not have, and the library that does
// this for XDP elsewhere (Cloudflare's cbpfc) is not one the appliance can
// build with, so this package does it: every load from the frame is
// checked against the end of its first buffer first, as the verifier
// requires, and a load past it rejects the frame, which is what classic
// BPF does with a load past the end of the packet.
//
// The semantics are those of classic BPF as Linux and libpcap run it
// (Documentation/networking/filter.rst in the kernel tree): 32-bit
// unsigned arithmetic, a division or remainder by a zero X rejects, the
// scratch memory M[0..15] starts zeroed, A and X start at 0.
package xdpfilter
