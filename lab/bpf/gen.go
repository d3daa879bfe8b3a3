// Package bpf holds the lab's XDP programs (lab.c): traffic sink and
// capture, generator and the devmap reference. The object and bindings are
// generated and committed; regenerate with `go generate ./lab/bpf` (needs
// clang, llvm and libbpf-dev).
package bpf

//go:generate go tool bpf2go -cc clang -target bpfel -type sink_stats Lab lab.c -- -O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu
