// The BPF object and its bindings are generated and committed; regenerate
// with `go generate ./bench/xdptraffic` (needs clang, llvm and libbpf-dev).
package xdptraffic

//go:generate go tool bpf2go -cc clang -target bpfel -type gen_state -type an_counts -type an_seq -type an_config Traffic traffic.c -- -O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu
