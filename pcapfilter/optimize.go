package pcapfilter

import "golang.org/x/net/bpf"

// The optimiser does what libpcap's does that matters to the verdict.
// libpcap's program is optimised, and what it optimises away includes
// loads: a frame too short for a load libpcap dropped must not be
// rejected for it here. So the same three things are done, and no more:
//
//   - jump threading: a jump to a test whose outcome is known on the way
//     there goes straight on to where the test leads. libpcap knows an
//     outcome when the same comparison of the same value was made on
//     every path there, or the value was found equal to a different
//     constant. Only tests of values already loaded are skipped.
//   - a test whose outcomes lead to the same place is dropped, loads and
//     all ("icmp or ip" accepts any IPv4 frame, however short).
//   - pull-up: in a chain of comparisons that goes on when one fails (for
//     and: succeeds) and otherwise always to the same place, a later
//     comparison of the value the chain started with moves up before
//     the first of another value, so "port 80 or 443" compares both
//     source ports before it loads the destination port.

// A fact is the outcome of a comparison of a value (test.akey) on a path.
type fact struct {
	key  string
	cond bpf.JumpTest
	k    uint32
	out  bool
}

// facts are what is known on a path, a list that a path that learns more
// extends: the paths to a block share what they knew before it. maxFacts
// bounds a list (later facts are not kept), and with it the work a long
// expression makes.
type facts struct {
	fact
	len  int
	rest *facts
}

const maxFacts = 64

func (fs *facts) with(t *test, out bool) *facts {
	if fs.len >= maxFacts {
		return fs
	}
	return &facts{fact{t.akey, t.cond, t.k, out}, fs.len + 1, fs}
}

// outcome is t's result if fs decide it.
func (fs *facts) outcome(t *test) (result, known bool) {
	for f := fs; f.rest != nil; f = f.rest {
		switch {
		case f.key != t.akey || f.cond != t.cond:
		case f.k == t.k:
			return f.out, true
		case f.cond == bpf.JumpEqual && f.out:
			known = true
		}
	}
	return false, known
}

// intersect is what is known on both of two paths.
func intersect(a, b *facts) *facts {
	in := make(map[fact]bool, b.len)
	for f := b; f.rest != nil; f = f.rest {
		in[f.fact] = true
	}
	c := &facts{}
	for f := a; f.rest != nil; f = f.rest {
		if in[f.fact] {
			c = &facts{f.fact, c.len + 1, c}
		}
	}
	return c
}

// thread marks the blocks reached from entry and threads their jumps.
// Blocks are in an order where every jump goes forward, so the facts at
// a block are final (what every jump to it knows) by the time it is
// reached.
func thread(blocks []block, entry int) {
	n := len(blocks)
	at := make([]*facts, n)
	at[entry] = &facts{}
	for i := entry; i < n; i++ {
		b := &blocks[i]
		if b.live = at[i] != nil; !b.live {
			continue
		}
		for o := range b.next {
			fs := at[i].with(b.t, o == 1)
			j := b.next[o]
			for r, ok := false, true; j < n && ok; {
				if r, ok = fs.outcome(blocks[j].t); ok {
					j = blocks[j].next[btoi(r)]
				}
			}
			if b.next[o] = j; j < n && at[j] == nil {
				at[j] = fs
			} else if j < n {
				at[j] = intersect(at[j], fs)
			}
		}
		at[i] = nil
	}
}

// prune drops the live blocks whose outcomes lead to the same place and
// returns the new entry, and whether it dropped any.
func prune(blocks []block, entry int) (int, bool) {
	alias := make([]int, len(blocks)+2)
	for i := range alias {
		alias[i] = i
	}
	pruned := false
	for i := len(blocks) - 1; i >= entry; i-- {
		if b := &blocks[i]; b.live {
			b.next = [2]int{alias[b.next[0]], alias[b.next[1]]}
			if b.next[0] == b.next[1] {
				alias[i], pruned = b.next[0], true
			}
		}
	}
	return alias[entry], pruned
}

// pullup makes a pull-up in the live blocks from block from on, if it
// finds one, and returns the block it made it for.
func pullup(blocks []block, from int) (int, bool) {
	n := len(blocks)
	preds := make([][]int, n)
	for i, b := range blocks {
		for _, j := range b.next {
			if b.live && j < n {
				preds[j] = append(preds[j], i)
			}
		}
	}
	for b := from; b < n; b++ {
		if !blocks[b].live || len(preds[b]) == 0 {
			continue
		}
		val := blocks[preds[b][0]].t.akey // what A holds on the way in
		for _, q := range preds[b] {
			if blocks[q].t.akey != val {
				val = ""
			}
		}
		for d := 0; d < 2 && val != ""; d++ { // d: the outcome the chain goes on with
			// on reports whether x is in the chain: b, or reached only
			// from the one before it and going where b goes on the other
			// outcome. (libpcap asks that b dominate it; in a chain that
			// comes to the same.)
			on := func(x int) bool {
				return x == b || x < n && len(preds[x]) == 1 && blocks[x].next[1-d] == blocks[b].next[1-d]
			}
			above, diff := -1, b // the first of another value, and the one before it
			for on(diff) && blocks[diff].t.akey == val {
				above, diff = diff, blocks[diff].next[d]
			}
			if !on(diff) {
				continue
			}
			before, pull := diff, blocks[diff].next[d]
			for on(pull) && blocks[pull].t.akey != val {
				before, pull = pull, blocks[pull].next[d]
			}
			if !on(pull) {
				continue
			}
			blocks[before].next[d], blocks[pull].next[d] = blocks[pull].next[d], diff
			if above >= 0 {
				blocks[above].next[d] = pull
			}
			for _, q := range preds[b] {
				for o, j := range blocks[q].next {
					if j == b && above < 0 {
						blocks[q].next[o] = pull
					}
				}
			}
			moveBefore(blocks, pull, diff)
			return b, true
		}
	}
	return n, false
}

// moveBefore moves block from to index to (< from), keeping every jump
// forward: the blocks in between move down by one.
func moveBefore(blocks []block, from, to int) {
	for i := range blocks {
		for o, j := range blocks[i].next {
			if j == from {
				blocks[i].next[o] = to
			} else if j >= to && j < from {
				blocks[i].next[o] = j + 1
			}
		}
	}
	b := blocks[from]
	copy(blocks[to+1:from+1], blocks[to:from])
	blocks[to] = b
}

// optimize threads, prunes and pulls up until nothing changes, within a
// bound on the rounds. It returns the entry block, len(blocks) if the
// program always accepts, len(blocks)+1 if it always rejects; ok is
// false if it is too long to finish.
func optimize(blocks []block) (entry int, ok bool) {
	for range 16 {
		thread(blocks, entry)
		var pruned bool
		if entry, pruned = prune(blocks, entry); entry >= len(blocks) {
			return entry, true
		}
		thread(blocks, entry) // to mark what is still live
		live := 0
		for _, b := range blocks {
			live += btoi(b.live)
		}
		if live > maxInstructions {
			return entry, false
		}
		pulled := 0 // each pull-up sorts a chain further; this bounds the work
		for b, ok := pullup(blocks, entry); ok && pulled < len(blocks); b, ok = pullup(blocks, b) {
			pulled++
		}
		if pulled == 0 && !pruned {
			break
		}
	}
	thread(blocks, entry)
	return entry, true
}
