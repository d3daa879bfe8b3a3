package pcapfilter

import (
	"slices"

	"golang.org/x/net/bpf"
)

// Code generation turns a node into a DAG of tests in an order where
// every jump goes forward, optimises it (optimize.go) and lays it out as
// classic BPF, loading a value only where A or X does not already hold it.

// A block is one test of the program and where its outcomes go: to a
// later block, or to accept (len(blocks)) or reject (len(blocks)+1).
type block struct {
	t    *test
	next [2]int // [0] if false, [1] if true
	live bool   // reached from the entry
}

// emit appends the blocks of n, whose outcomes go to blocks t and f, and
// returns its first block. Blocks are made last first, so that their
// targets exist; reversed, they are in the order of evaluation.
func emit(blocks *[]block, n node, t, f int) int {
	switch n := n.(type) {
	case *andNode:
		return emit(blocks, n.l, emit(blocks, n.r, t, f), f)
	case *orNode:
		return emit(blocks, n.l, t, emit(blocks, n.r, t, f))
	case *notNode:
		return emit(blocks, n.x, f, t)
	}
	*blocks = append(*blocks, block{t: n.(*test), next: [2]int{f, t}})
	return len(*blocks) - 1
}

// generate compiles n into a program that returns Accept where n is true
// and 0 where it is false; ok is false if it would be too long.
func generate(n node) (prog []bpf.Instruction, ok bool) {
	ret := func(v uint32) []bpf.Instruction { return []bpf.Instruction{bpf.RetConstant{Val: v}} }
	var blocks []block
	if emit(&blocks, n, -1, -2); len(blocks) > 4*maxInstructions {
		return nil, false // and spare the optimiser the work
	}
	slices.Reverse(blocks)
	last := len(blocks) - 1
	for i := range blocks {
		for o, j := range blocks[i].next {
			blocks[i].next[o] = last - j // -1 and -2 become accept and reject
		}
	}
	entry, ok := optimize(blocks)
	switch {
	case !ok:
		return nil, false
	case entry == len(blocks):
		return ret(accept), true
	case entry > len(blocks):
		return ret(0), true
	case entry > 0:
		// The first test is gone, but not what it loads: libpcap keeps
		// the loads of its first block unless the program is a constant,
		// and a frame too short for them is rejected.
		prog = append(slices.Clone(blocks[0].t.x), blocks[0].t.a...)
	}
	prog = layout(blocks, prog, blocks[0].t)
	return prog, len(prog) <= maxInstructions
}

// regs is what A and X hold ("" for unknown).
type regs struct{ a, x string }

// layout emits the live blocks in order after prog, which holds first's
// loads, if any. A test does not load what A or X already holds on every
// jump to it. A conditional jump reaches at most 255 instructions; one
// that must go further jumps to an unconditional jump (32-bit offset)
// placed right after it. Adding those moves code, so layout repeats
// until no further jump needs one.
func layout(blocks []block, prog []bpf.Instruction, first *test) []bpf.Instruction {
	n := len(blocks)
	in := make([][]regs, n) // the registers on each jump to a block
	loads := make([][]bpf.Instruction, n)
	for i, b := range blocks {
		if !b.live {
			continue
		}
		var r regs
		if len(in[i]) == 0 && prog != nil {
			r = regs{first.akey, first.xkey}
		} else if len(in[i]) > 0 && !slices.ContainsFunc(in[i], func(s regs) bool { return s != in[i][0] }) {
			r = in[i][0]
		}
		if b.t.x != nil && r.x != b.t.xkey {
			loads[i], r.x = b.t.x, b.t.xkey
		}
		if r.a != b.t.akey {
			loads[i], r.a = append(slices.Clip(loads[i]), b.t.a...), b.t.akey
		}
		for _, j := range b.next {
			if j < n {
				in[j] = append(in[j], r)
			}
		}
	}

	far := make([][2]bool, n)
	start := make([]int, n+2) // of each block; then accept, reject
	jump := func(i int) int { return start[i] + len(loads[i]) }
	for changed := true; changed; {
		a := len(prog)
		for i, b := range blocks {
			if start[i] = a; b.live {
				a = jump(i) + 1 + btoi(far[i][0]) + btoi(far[i][1])
			}
		}
		start[n], start[n+1] = a, a+1
		changed = false
		for i, b := range blocks {
			for o, j := range b.next {
				if b.live && !far[i][o] && start[j]-jump(i)-1 > 255 {
					far[i][o], changed = true, true
				}
			}
		}
	}

	for i, b := range blocks {
		if !b.live {
			continue
		}
		prog = append(prog, loads[i]...)
		var skip [2]uint8
		var tramps []bpf.Instruction
		for _, o := range []int{1, 0} {
			if d := start[b.next[o]] - jump(i) - 1; !far[i][o] {
				skip[o] = uint8(d)
			} else {
				skip[o] = uint8(len(tramps))
				tramps = append(tramps, bpf.Jump{Skip: uint32(d - 1 - len(tramps))})
			}
		}
		prog = append(prog, bpf.JumpIf{Cond: b.t.cond, Val: b.t.k, SkipTrue: skip[1], SkipFalse: skip[0]})
		prog = append(prog, tramps...)
	}
	return append(prog, bpf.RetConstant{Val: accept}, bpf.RetConstant{Val: 0})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
