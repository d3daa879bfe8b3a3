// Package sink holds the counting sinks of the bench's traffic
// (bench/xdptraffic): programs that count the frames reaching a port, and
// drop or copy them out, for traffic without a stamp (the lab's). It is
// apart from the generator and analyzer so that the appliance, which runs
// only those, does not carry it. The BPF object and its bindings are
// generated and committed; regenerate with `go generate
// ./bench/xdptraffic/sink` (needs clang, llvm and libbpf-dev).
package sink

//go:generate go tool bpf2go -cc clang -target bpfel -type sink_stats Sink sink.c -- -O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu
