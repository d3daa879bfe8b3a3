package xdpfilter

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/net/bpf"
)

// Registers of the function Function makes. R1-R3 come in as the
// arguments and are moved to callee-saved registers, which the caller gets
// back unchanged; R1 and R2 are then scratch.
const (
	regData = asm.R6 // the frame's first byte
	regEnd  = asm.R7 // the end of its first buffer
	regLen  = asm.R8 // the whole frame's length, every buffer of it
	regA    = asm.R0 // classic BPF's accumulator, and the result
	regX    = asm.R9 // classic BPF's index register
)

// maxInsns is classic BPF's own limit (BPF_MAXINSNS).
const maxInsns = 4096

// maxOffset is the largest offset a load may reach through an
// instruction's 16-bit signed offset field; loads past it reject, as they
// would past the end of any frame the box carries.
const maxOffset = 1<<15 - 1

// jumpTo marks an instruction whose Offset is filled in once every
// classic instruction's place in the output is known.
type jumpTo struct {
	at     int // index of the jump in the output
	target int // classic instruction index, or reject
}

const reject = -1

type translator struct {
	out   asm.Instructions
	jumps []jumpTo
}

func (t *translator) emit(ins ...asm.Instruction) { t.out = append(t.out, ins...) }

// jump emits a jump (cond applied to A, or unconditional with op Ja) to
// a classic instruction or to reject.
func (t *translator) jump(ins asm.Instruction, target int) {
	t.jumps = append(t.jumps, jumpTo{at: len(t.out), target: target})
	t.out = append(t.out, ins)
}

// Function translates the classic BPF program prog into an eBPF function
// called name. The function takes, in R1, R2 and R3, the frame's first
// byte, the end of its first buffer and the whole frame's length (XDP's
// data, data_end and bpf_xdp_get_buff_len), and returns in R0 what prog
// returns: 0 rejects the frame, anything else is how many bytes of it to
// keep. A load past the first buffer rejects; headers are never past it.
func Function(name string, prog []bpf.Instruction) (asm.Instructions, error) {
	if len(prog) == 0 || len(prog) > maxInsns {
		return nil, fmt.Errorf("xdpfilter: a program has 1 to %d instructions, this one %d", maxInsns, len(prog))
	}
	if !isReturn(prog[len(prog)-1]) {
		return nil, fmt.Errorf("xdpfilter: instruction %d (%v): the last instruction must return", len(prog)-1, prog[len(prog)-1])
	}
	t := &translator{}
	t.emit(
		asm.Mov.Reg(regData, asm.R1),
		asm.Mov.Reg(regEnd, asm.R2),
		asm.Mov.Reg(regLen, asm.R3),
		asm.Mov.Imm32(regA, 0),
		asm.Mov.Imm32(regX, 0),
	)
	if usesScratch(prog) {
		for n := 0; n < 16; n++ {
			t.emit(asm.StoreImm(asm.RFP, scratch(n), 0, asm.Word))
		}
	}
	live, err := reachable(prog)
	if err != nil {
		return nil, err
	}
	starts := make([]int, len(prog))
	for i, ins := range prog {
		starts[i] = len(t.out)
		if !live[i] {
			continue // the verifier refuses code that cannot run
		}
		if err := t.translate(i, ins, len(prog)); err != nil {
			return nil, fmt.Errorf("xdpfilter: instruction %d (%v): %w", i, ins, err)
		}
	}
	rejectAt := len(t.out)
	for _, j := range t.jumps {
		if j.target == reject {
			t.emit(asm.Mov.Imm32(asm.R0, 0), asm.Return())
			break
		}
	}
	for _, j := range t.jumps {
		to := rejectAt
		if j.target != reject {
			to = starts[j.target]
		}
		off := to - (j.at + 1)
		if off > maxOffset {
			return nil, fmt.Errorf("xdpfilter: program too long: a jump spans %d instructions", off)
		}
		t.out[j.at].Offset = int16(off)
	}
	t.out[0] = t.out[0].WithSymbol(name)
	return t.out, nil
}

// reachable marks the instructions a run can reach: classic BPF only
// jumps forward, so one pass in order finds them all.
func reachable(prog []bpf.Instruction) ([]bool, error) {
	live := make([]bool, len(prog))
	live[0] = true
	for i, ins := range prog {
		if !live[i] {
			continue
		}
		var next []uint32
		switch ins := ins.(type) {
		case bpf.RetA, bpf.RetConstant:
		case bpf.Jump:
			next = []uint32{ins.Skip}
		case bpf.JumpIf:
			next = []uint32{uint32(ins.SkipTrue), uint32(ins.SkipFalse)}
		case bpf.JumpIfX:
			next = []uint32{uint32(ins.SkipTrue), uint32(ins.SkipFalse)}
		default:
			next = []uint32{0}
		}
		for _, skip := range next {
			to, err := target(i, skip, len(prog))
			if err != nil {
				return nil, fmt.Errorf("xdpfilter: instruction %d (%v): %w", i, ins, err)
			}
			live[to] = true
		}
	}
	return live, nil
}

func isReturn(ins bpf.Instruction) bool {
	switch ins.(type) {
	case bpf.RetA, bpf.RetConstant:
		return true
	}
	return false
}

func usesScratch(prog []bpf.Instruction) bool {
	for _, ins := range prog {
		switch ins.(type) {
		case bpf.LoadScratch, bpf.StoreScratch:
			return true
		}
	}
	return false
}

// scratch is M[n]'s place on the stack.
func scratch(n int) int16 { return int16(-4 * (n + 1)) }

func reg(r bpf.Register) asm.Register {
	if r == bpf.RegX {
		return regX
	}
	return regA
}

func size(n int) (asm.Size, error) {
	switch n {
	case 1:
		return asm.Byte, nil
	case 2:
		return asm.Half, nil
	case 4:
		return asm.Word, nil
	}
	return 0, fmt.Errorf("load of %d bytes", n)
}

// target checks a jump that skips skip instructions after i.
func target(i int, skip uint32, n int) (int, error) {
	to := i + 1 + int(skip)
	if to >= n {
		return 0, fmt.Errorf("jumps to %d, past the program's end", to)
	}
	return to, nil
}

func (t *translator) translate(i int, ins bpf.Instruction, n int) error {
	switch ins := ins.(type) {
	case bpf.LoadConstant:
		t.emit(asm.Mov.Imm32(reg(ins.Dst), int32(ins.Val)))
	case bpf.LoadScratch:
		if ins.N < 0 || ins.N > 15 {
			return fmt.Errorf("scratch slot %d out of 0-15", ins.N)
		}
		t.emit(asm.LoadMem(reg(ins.Dst), asm.RFP, scratch(ins.N), asm.Word))
	case bpf.StoreScratch:
		if ins.N < 0 || ins.N > 15 {
			return fmt.Errorf("scratch slot %d out of 0-15", ins.N)
		}
		t.emit(asm.StoreMem(asm.RFP, scratch(ins.N), reg(ins.Src), asm.Word))
	case bpf.LoadAbsolute:
		return t.load(ins.Off, ins.Size, false)
	case bpf.LoadIndirect:
		return t.load(ins.Off, ins.Size, true)
	case bpf.LoadMemShift:
		if int(ins.Off)+1 > maxOffset {
			t.jump(asm.Ja.Label(""), reject)
			return nil
		}
		t.emit(asm.Mov.Reg(asm.R1, regData), asm.Add.Imm(asm.R1, int32(ins.Off)+1))
		t.jump(asm.JGT.Reg(asm.R1, regEnd, ""), reject)
		t.emit(asm.LoadMem(regX, regData, int16(ins.Off), asm.Byte),
			asm.And.Imm32(regX, 0xf), asm.LSh.Imm32(regX, 2))
	case bpf.LoadExtension:
		if ins.Num != bpf.ExtLen {
			return fmt.Errorf("extension %v is not supported at the XDP hook", ins.Num)
		}
		t.emit(asm.Mov.Reg32(regA, regLen))
	case bpf.ALUOpConstant:
		op, err := aluOp(ins.Op)
		if err != nil {
			return err
		}
		switch {
		case (ins.Op == bpf.ALUOpDiv || ins.Op == bpf.ALUOpMod) && ins.Val == 0:
			return fmt.Errorf("division by zero")
		case (ins.Op == bpf.ALUOpShiftLeft || ins.Op == bpf.ALUOpShiftRight) && ins.Val >= 32:
			return fmt.Errorf("shift by %d, more than 31", ins.Val)
		}
		t.emit(op.Imm32(regA, int32(ins.Val)))
	case bpf.ALUOpX:
		op, err := aluOp(ins.Op)
		if err != nil {
			return err
		}
		if ins.Op == bpf.ALUOpDiv || ins.Op == bpf.ALUOpMod {
			t.jump(asm.JEq.Imm32(regX, 0, ""), reject)
		}
		t.emit(op.Reg32(regA, regX))
	case bpf.NegateA:
		t.emit(asm.Neg.Imm32(regA, 0))
	case bpf.Jump:
		to, err := target(i, ins.Skip, n)
		if err != nil {
			return err
		}
		t.jump(asm.Ja.Label(""), to)
	case bpf.JumpIf:
		return t.cond(i, n, ins.Cond, ins.SkipTrue, ins.SkipFalse, func(op asm.JumpOp) asm.Instruction {
			return op.Imm32(regA, int32(ins.Val), "")
		})
	case bpf.JumpIfX:
		return t.cond(i, n, ins.Cond, ins.SkipTrue, ins.SkipFalse, func(op asm.JumpOp) asm.Instruction {
			return op.Reg32(regA, regX, "")
		})
	case bpf.RetA:
		t.emit(asm.Return())
	case bpf.RetConstant:
		t.emit(asm.Mov.Imm32(asm.R0, int32(ins.Val)), asm.Return())
	case bpf.TAX:
		t.emit(asm.Mov.Reg32(regX, regA))
	case bpf.TXA:
		t.emit(asm.Mov.Reg32(regA, regX))
	default:
		return fmt.Errorf("instruction not supported at the XDP hook")
	}
	return nil
}

// load emits A = the n bytes at off into the frame (past X when
// indirect), as a number; a load past the first buffer rejects.
func (t *translator) load(off uint32, n int, indirect bool) error {
	sz, err := size(n)
	if err != nil {
		return err
	}
	end := int(off) + n
	if end > maxOffset {
		t.jump(asm.Ja.Label(""), reject)
		return nil
	}
	base := regData
	if indirect {
		// X is bounded first, so that the verifier accepts the
		// pointer it is added to: X and the load's end together stay
		// within the 64 KiB it tracks packet offsets in.
		t.emit(asm.Mov.Reg32(asm.R2, regX))
		t.jump(asm.JGT.Imm(asm.R2, maxOffset, ""), reject)
		t.emit(asm.Mov.Reg(asm.R1, regData), asm.Add.Reg(asm.R1, asm.R2))
		base = asm.R1
	}
	t.emit(asm.Mov.Reg(asm.R2, base), asm.Add.Imm(asm.R2, int32(end)))
	t.jump(asm.JGT.Reg(asm.R2, regEnd, ""), reject)
	t.emit(asm.LoadMem(regA, base, int16(off), sz))
	t.swap(sz)
	return nil
}

// swap turns a big-endian load into the number classic BPF sees.
func (t *translator) swap(sz asm.Size) {
	switch sz {
	case asm.Half:
		t.emit(asm.HostTo(asm.BE, regA, asm.Half))
	case asm.Word:
		t.emit(asm.HostTo(asm.BE, regA, asm.Word))
	}
}

// cond emits a conditional jump: to the true target when the condition
// holds, else on to the false target.
func (t *translator) cond(i, n int, c bpf.JumpTest, skipTrue, skipFalse uint8, make func(asm.JumpOp) asm.Instruction) error {
	yes, err := target(i, uint32(skipTrue), n)
	if err != nil {
		return err
	}
	no, err := target(i, uint32(skipFalse), n)
	if err != nil {
		return err
	}
	var op asm.JumpOp
	switch c {
	case bpf.JumpEqual:
		op = asm.JEq
	case bpf.JumpNotEqual:
		op = asm.JNE
	case bpf.JumpGreaterThan:
		op = asm.JGT
	case bpf.JumpLessThan:
		op = asm.JLT
	case bpf.JumpGreaterOrEqual:
		op = asm.JGE
	case bpf.JumpLessOrEqual:
		op = asm.JLE
	case bpf.JumpBitsSet:
		op = asm.JSet
	case bpf.JumpBitsNotSet:
		// No such eBPF jump: test the bits and swap the targets.
		op, yes, no = asm.JSet, no, yes
	default:
		return fmt.Errorf("unknown condition %v", c)
	}
	t.jump(make(op), yes)
	if no != i+1 {
		t.jump(asm.Ja.Label(""), no)
	}
	return nil
}

// aluOps are classic BPF's arithmetic and their eBPF counterparts, run
// on 32 bits (the *32 forms), as classic BPF's are.
var aluOps = map[bpf.ALUOp]asm.ALUOp{
	bpf.ALUOpAdd: asm.Add, bpf.ALUOpSub: asm.Sub, bpf.ALUOpMul: asm.Mul, bpf.ALUOpDiv: asm.Div,
	bpf.ALUOpOr: asm.Or, bpf.ALUOpAnd: asm.And, bpf.ALUOpShiftLeft: asm.LSh, bpf.ALUOpShiftRight: asm.RSh,
	bpf.ALUOpMod: asm.Mod, bpf.ALUOpXor: asm.Xor,
}

func aluOp(op bpf.ALUOp) (asm.ALUOp, error) {
	if o, ok := aluOps[op]; ok {
		return o, nil
	}
	return 0, fmt.Errorf("unknown ALU operation %v", op)
}
