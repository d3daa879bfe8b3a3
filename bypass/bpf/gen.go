// Package bpf holds the sim relay's tc program (relay.c) and its Go
// bindings. The object and bindings are generated and committed, so a
// build needs no clang; after changing relay.c, regenerate with
//
//	apt-get install -y clang llvm libbpf-dev
//	go generate ./bypass/bpf
package bpf

//go:generate go tool bpf2go -cc clang -target bpfel -type relay Relay relay.c -- -O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu
