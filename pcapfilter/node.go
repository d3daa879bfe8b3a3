package pcapfilter

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// A node is the filter as a boolean expression over single comparisons,
// each a load into A and a conditional jump, like the blocks libpcap
// builds. The order of the operands is the order of evaluation: it
// decides which loads a truncated frame gets to fail.
type node any

type andNode struct{ l, r node }
type orNode struct{ l, r node }
type notNode struct{ x node }

// A test computes a value into A (x first sets X, for a load relative to
// the IPv4 header length) and jumps on cond against k.
type test struct {
	x, a       []bpf.Instruction
	xkey, akey string // what X and A hold afterwards, to skip reloading them
	cond       bpf.JumpTest
	k          uint32
}

func and(ns ...node) node {
	for len(ns) > 1 {
		ns = append([]node{&andNode{ns[0], ns[1]}}, ns[2:]...)
	}
	return ns[0]
}

func or(ns ...node) node {
	for len(ns) > 1 {
		ns = append([]node{&orNode{ns[0], ns[1]}}, ns[2:]...)
	}
	return ns[0]
}

func not(n node) node {
	if n, ok := n.(*notNode); ok {
		return n.x
	}
	return &notNode{n}
}

func newTest(x, a []bpf.Instruction, cond bpf.JumpTest, k uint32) *test {
	t := &test{x: x, a: a, cond: cond, k: k, akey: fmt.Sprint(a)}
	if x != nil {
		t.xkey = fmt.Sprint(x)
		t.akey = t.xkey + t.akey
	}
	return t
}

// ld loads size bytes (1, 2 or 4) at off.
func ld(off uint32, size int) []bpf.Instruction {
	return []bpf.Instruction{bpf.LoadAbsolute{Off: off, Size: size}}
}

// cmp compares the size bytes at off with k.
func cmp(off uint32, size int, cond bpf.JumpTest, k uint32) node {
	return newTest(nil, ld(off, size), cond, k)
}

func eq(off uint32, size int, k uint32) node { return cmp(off, size, bpf.JumpEqual, k) }

// masked is true if the size bytes at off, and-ed with mask (not 0),
// equal k.
func masked(off uint32, size int, mask, k uint32) node {
	switch {
	case mask == 1<<(8*size)-1:
		return eq(off, size, k)
	case k == 0:
		return not(cmp(off, size, bpf.JumpBitsSet, mask))
	}
	return newTest(nil, append(ld(off, size), bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: mask}), bpf.JumpEqual, k)
}
