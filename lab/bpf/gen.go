// Package bpf holds the lab's own XDP program (lab.c): the devmap
// reference the bench compares the datapath with. The object and bindings
// are generated and committed; regenerate with `go generate ./lab/bpf`
// (needs clang, llvm and libbpf-dev).
package bpf

//go:generate go tool bpf2go -cc clang -target bpfel Lab lab.c -- -O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu
