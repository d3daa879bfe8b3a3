// Package bpf holds the forwarder's XDP programs (port.c) and their Go
// bindings. The object file and bindings are generated and committed, so a
// build needs no clang; after changing port.c, regenerate with
//
//	apt-get install -y clang llvm libbpf-dev
//	go generate ./forwarder/bpf
package bpf

//go:generate go tool bpf2go -cc clang -target bpfel -type port_stats -type flow_key -type flow -type flow_counters -type capture_hdr -type capture_state -type lldp_sender Datapath port.c -- -O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu
