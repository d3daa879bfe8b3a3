package xdpfilter_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/net/bpf"

	"github.com/ncpos/ncpos/forwarder/xdpfilter"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/pcapfilter"
)

// runner runs a translated filter in the kernel under BPF_PROG_RUN, as
// an XDP program that calls it the way the capture program does, and
// reads back what it returned.
type runner struct {
	prog   *ebpf.Program
	result *ebpf.Map
}

func newRunner(t *testing.T, filter []bpf.Instruction) *runner {
	t.Helper()
	fn, err := xdpfilter.Function("filter", filter)
	if err != nil {
		t.Fatalf("translating:\n%v\n%v", disasm(filter), err)
	}
	result, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { result.Close() })
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnXdpGetBuffLen.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.LoadMem(asm.R1, asm.R6, 0, asm.Word), // data
		asm.LoadMem(asm.R2, asm.R6, 4, asm.Word), // data_end
		asm.Call.Label("filter"),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.LoadMapValue(asm.R1, result.FD(), 0),
		asm.StoreMem(asm.R1, 0, asm.R2, asm.Word),
		asm.Mov.Imm(asm.R0, 2), // XDP_PASS
		asm.Return(),
	}
	insns = append(insns, fn...)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, Instructions: insns, License: "GPL"})
	if err != nil {
		t.Fatalf("loading:\n%v\n%v", fn, err)
	}
	t.Cleanup(func() { prog.Close() })
	return &runner{prog: prog, result: result}
}

func (r *runner) run(t *testing.T, frame []byte) uint32 {
	t.Helper()
	if _, err := r.prog.Run(&ebpf.RunOptions{Data: frame}); err != nil {
		t.Fatalf("running on %x: %v", frame, err)
	}
	var v uint32
	if err := r.result.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func disasm(p []bpf.Instruction) string {
	var b bytes.Buffer
	for i, ins := range p {
		fmt.Fprintf(&b, "%3d %v\n", i, ins)
	}
	return b.String()
}

// corpus is frames of every shape the filters below look at, short ones
// included, so that loads past the end are exercised.
func corpus() [][]byte {
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	a6, b6 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	eth := func(typ uint16, p []byte) []byte { return frames.Ethernet(frames.MACB, frames.MACA, typ, p) }
	opts := frames.IPv4(a, b, 17, frames.UDP(53, 5353, []byte("x")))
	opts = append(append(append([]byte{}, opts[:20]...), 1, 1, 1, 0), opts[20:]...)
	opts[0] = 0x46
	var out [][]byte
	for _, f := range frames.WireFrames(9000) {
		out = append(out, f)
	}
	out = append(out,
		eth(0x0800, frames.IPv4(a, b, 6, frames.TCP(1234, 80, 0x02, nil))),
		eth(0x0800, frames.IPv4(b, a, 17, frames.UDP(53, 40000, []byte("dns")))),
		eth(0x0800, opts),
		eth(0x86dd, frames.IPv6(a6, b6, 17, frames.UDP(5353, 53, nil))),
		frames.VLAN(eth(0x0800, frames.IPv4(a, b, 6, frames.TCP(22, 1000, 0x10, nil))), 42),
		frames.QinQ(eth(0x0800, frames.IPv4(a, b, 6, frames.TCP(22, 1000, 0x10, nil))), 100, 42),
		frames.MPLS(eth(0x0800, frames.IPv4(a, b, 1, frames.ICMPEcho(8, 1, 1, nil))), 100, 200),
		frames.ARPRequest(),
	)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range append([][]byte{}, out...) {
		for _, n := range []int{14, 15, 20, 23, 34, 38, 42} {
			if n < len(f) {
				out = append(out, f[:n])
			}
		}
		g := bytes.Clone(f)
		for range 4 {
			g[rng.IntN(min(len(g), 64))] ^= byte(rng.Uint32())
		}
		out = append(out, g)
	}
	return out
}

// programs holds hand-written classic BPF that uses every instruction
// Function translates.
var programs = map[string][]bpf.Instruction{
	"accept all": {bpf.RetConstant{Val: 262144}},
	"ipv4 tcp or udp port 80 or 53 (libpcap's shape)": {
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x800, SkipFalse: 10},
		bpf.LoadAbsolute{Off: 23, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 6, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 17, SkipFalse: 7},
		bpf.LoadAbsolute{Off: 20, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff, SkipTrue: 5},
		bpf.LoadMemShift{Off: 14},
		bpf.LoadIndirect{Off: 14, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 80, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 53, SkipFalse: 1},
		bpf.RetConstant{Val: 262144},
		bpf.RetConstant{Val: 0},
	},
	"arithmetic and scratch": {
		bpf.LoadAbsolute{Off: 14, Size: 4},
		bpf.StoreScratch{Src: bpf.RegA, N: 3},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x00ff00ff},
		bpf.ALUOpConstant{Op: bpf.ALUOpMul, Val: 7},
		bpf.ALUOpConstant{Op: bpf.ALUOpXor, Val: 0x5a5a},
		bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 3},
		bpf.ALUOpConstant{Op: bpf.ALUOpMod, Val: 1000},
		bpf.TAX{},
		bpf.LoadScratch{Dst: bpf.RegA, N: 3},
		bpf.ALUOpX{Op: bpf.ALUOpAdd},
		bpf.ALUOpConstant{Op: bpf.ALUOpSub, Val: 5},
		bpf.ALUOpConstant{Op: bpf.ALUOpOr, Val: 1},
		bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 1},
		bpf.ALUOpConstant{Op: bpf.ALUOpDiv, Val: 3},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xffff},
		bpf.RetA{},
	},
	"divide by X, zero or not": {
		bpf.LoadAbsolute{Off: 15, Size: 1},
		bpf.TAX{},
		bpf.LoadAbsolute{Off: 16, Size: 2},
		bpf.ALUOpX{Op: bpf.ALUOpDiv},
		bpf.StoreScratch{Src: bpf.RegA, N: 0},
		bpf.LoadAbsolute{Off: 16, Size: 2},
		bpf.ALUOpX{Op: bpf.ALUOpMod},
		bpf.LoadScratch{Dst: bpf.RegX, N: 0},
		bpf.ALUOpX{Op: bpf.ALUOpXor},
		bpf.ALUOpConstant{Op: bpf.ALUOpOr, Val: 1},
		bpf.RetA{},
	},
	"compares with X and every condition": {
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.TAX{},
		bpf.LoadAbsolute{Off: 14, Size: 1},
		bpf.JumpIfX{Cond: bpf.JumpGreaterThan, SkipTrue: 8},
		bpf.JumpIf{Cond: bpf.JumpLessThan, Val: 0x40, SkipTrue: 7},
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x60, SkipTrue: 7},
		bpf.JumpIf{Cond: bpf.JumpLessOrEqual, Val: 0x45, SkipFalse: 1},
		bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: 0x0f, SkipTrue: 5, SkipFalse: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x4f, SkipTrue: 3},
		bpf.TXA{},
		bpf.JumpIfX{Cond: bpf.JumpEqual, SkipTrue: 1},
		bpf.Jump{Skip: 2},
		bpf.RetConstant{Val: 1},
		bpf.RetConstant{Val: 2},
		bpf.LoadExtension{Num: bpf.ExtLen},
		bpf.RetA{},
	},
	"indirect through X from A (tax)": {
		bpf.LoadAbsolute{Off: 14, Size: 1},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x3f},
		bpf.TAX{},
		bpf.LoadIndirect{Off: 14, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: 0x8000, SkipTrue: 1},
		bpf.RetA{},
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.TAX{},
		bpf.LoadIndirect{Off: 0, Size: 1},
		bpf.RetA{},
	},
	"indirect past the end": {
		bpf.LoadConstant{Dst: bpf.RegX, Val: 60},
		bpf.LoadIndirect{Off: 0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
		bpf.RetConstant{Val: 3},
		bpf.RetConstant{Val: 4},
	},
}

// TestMatchesClassicBPF runs every program on every frame in the kernel
// and in x/net/bpf's classic BPF interpreter and wants the same result.
func TestMatchesClassicBPF(t *testing.T) {
	testenv.NeedRoot(t, testenv.Lab, "BPF")
	fs := corpus()
	for name, p := range programs {
		t.Run(name, func(t *testing.T) {
			vm, err := bpf.NewVM(p)
			if err != nil {
				t.Fatal(err)
			}
			r := newRunner(t, p)
			var accepted int
			for _, f := range fs {
				got := r.run(t, f)
				want, err := vm.Run(f)
				if err != nil {
					t.Fatal(err)
				}
				if int(got) != want {
					t.Fatalf("frame %x: kernel %d, classic BPF %d\n%v", f, got, want, disasm(p))
				}
				if want != 0 {
					accepted++
				}
			}
			t.Logf("%d frames, %d accepted", len(fs), accepted)
			if name != "accept all" && (accepted == 0 || accepted == len(fs)) {
				t.Errorf("the corpus does not tell this program's outcomes apart")
			}
		})
	}
}

func TestNegate(t *testing.T) {
	testenv.NeedRoot(t, testenv.Lab, "BPF")
	r := newRunner(t, []bpf.Instruction{bpf.LoadAbsolute{Off: 0, Size: 1}, bpf.NegateA{}, bpf.RetA{}})
	f := frames.ARPRequest()
	if got, want := r.run(t, f), uint32(-int32(f[0])); got != want {
		t.Errorf("-%d: got %#x, want %#x", f[0], got, want)
	}
}

func TestRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		p    []bpf.Instruction
		want string
	}{
		{"empty", nil, "1 to 4096 instructions"},
		{"no return at the end", []bpf.Instruction{bpf.LoadAbsolute{Off: 0, Size: 1}}, "must return"},
		{"jump past the end", []bpf.Instruction{bpf.Jump{Skip: 3}, bpf.RetA{}}, "past the program's end"},
		{"division by zero", []bpf.Instruction{bpf.ALUOpConstant{Op: bpf.ALUOpDiv}, bpf.RetA{}}, "division by zero"},
		{"long shift", []bpf.Instruction{bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 32}, bpf.RetA{}}, "shift by 32"},
		{"extension", []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtRand}, bpf.RetA{}}, "not supported"},
		{"scratch slot", []bpf.Instruction{bpf.LoadScratch{N: 16}, bpf.RetA{}}, "scratch slot 16"},
	} {
		_, err := xdpfilter.Function("f", c.p)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestLongProgram: jumps over more than 255 classic instructions, and a
// program near classic BPF's limit, still load.
func TestLongProgram(t *testing.T) {
	testenv.NeedRoot(t, testenv.Lab, "BPF")
	var p []bpf.Instruction
	p = append(p, bpf.LoadAbsolute{Off: 12, Size: 2}, bpf.Jump{Skip: 3000})
	for range 3000 {
		p = append(p, bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: 1})
	}
	p = append(p, bpf.RetA{})
	r := newRunner(t, p)
	f := frames.ARPRequest()
	if got := r.run(t, f); got != uint32(binary.BigEndian.Uint16(f[12:])) {
		t.Errorf("got %#x", got)
	}
}

// TestPcapFilters translates what package pcapfilter compiles operators'
// filters to, and wants the kernel to keep the frames the interpreter
// keeps.
func TestPcapFilters(t *testing.T) {
	testenv.NeedRoot(t, testenv.Lab, "BPF")
	fs := corpus()
	for _, expr := range []string{
		"", "vlan 42", "vlan and vlan 42", "not vlan", "mpls 100", "mpls and ip",
		"host 10.0.0.1", "src net 10.0.0.0/8 and udp", "ip6 and udp port 53", "tcp port 80 or 22",
		"portrange 50-60", "arp or rarp", "ether proto 0x88cc", "ether dst 02:6e:63:70:00:0b",
		"icmp or icmp6", "greater 1000", "less 61", "not (tcp or udp)", "ip proto 1",
		"vlan 42 and tcp port 22", "ether broadcast or ether multicast",
	} {
		t.Run(expr, func(t *testing.T) {
			p, err := pcapfilter.Compile(expr)
			if err != nil {
				t.Fatal(err)
			}
			vm, err := bpf.NewVM(p)
			if err != nil {
				t.Fatal(err)
			}
			r := newRunner(t, p)
			var kept int
			for _, f := range fs {
				want, err := vm.Run(f)
				if err != nil {
					t.Fatal(err)
				}
				if got := r.run(t, f); int(got) != want {
					t.Fatalf("frame %x: kernel %d, classic BPF %d\n%v", f, got, want, disasm(p))
				}
				if want != 0 {
					kept++
				}
			}
			t.Logf("%d of %d frames kept", kept, len(fs))
		})
	}
}
