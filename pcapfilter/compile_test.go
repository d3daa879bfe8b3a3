package pcapfilter

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/ncpos/ncpos/internal/frames"
	"golang.org/x/net/bpf"
)

func TestEmptyAcceptsAll(t *testing.T) {
	for _, expr := range []string{"", " \t\n"} {
		prog, err := Compile(expr)
		if err != nil || len(prog) != 1 || prog[0] != (bpf.RetConstant{Val: accept}) {
			t.Errorf("Compile(%q) = %v, %v, want a program that accepts every frame", expr, prog, err)
		}
	}
}

// TestLongJumps checks the unconditional jumps that carry a conditional
// jump further than its 8-bit offset reaches.
func TestLongJumps(t *testing.T) {
	prog, err := Compile(manyPorts())
	if err != nil {
		t.Fatal(err)
	}
	far := 0
	for _, ins := range prog {
		if _, ok := ins.(bpf.Jump); ok {
			far++
		}
	}
	if far == 0 || len(prog) < 300 {
		t.Fatalf("%d instructions, %d long jumps: want a program long enough to need them", len(prog), far)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for port, want := range map[uint16]bool{999: false, 1000: true, 1077: true, 1149: true, 1150: false} {
		for _, f := range [][]byte{
			frames.Ethernet(macB, macA, 0x0800, frames.IPv4(a, b, 6, frames.TCP(5000, port, 0x02, nil))),
			frames.Ethernet(macB, macA, 0x86dd, frames.IPv6(addr("2001:db8::1"), addr("2001:db8::2"), 6, frames.TCP(5000, port, 0x02, nil))),
		} {
			if got := accepts(t, vm, f); got != want {
				t.Errorf("tcp dst port %d: accepted %v, want %v", port, got, want)
			}
		}
	}
}

// FuzzCompile checks that Compile never panics, fails only with its own
// errors, and that every program it returns is valid classic BPF that
// runs.
func FuzzCompile(f *testing.F) {
	for _, e := range expressions {
		f.Add(e)
	}
	for _, tc := range errorCases {
		f.Add(tc.expr)
	}
	f.Add(manyPorts())
	samples := corpus()
	f.Fuzz(func(t *testing.T, expr string) {
		prog, err := Compile(expr)
		var se *SyntaxError
		switch {
		case errors.As(err, &se):
			if se.Offset < 0 || se.Offset > len(expr) || se.Msg == "" {
				t.Fatalf("Compile(%q): %v: offset out of range or no message", expr, err)
			}
			return
		case errors.Is(err, errTooLong):
			return
		case err != nil:
			t.Fatalf("Compile(%q): unexpected error %v", expr, err)
		}
		if len(prog) == 0 || len(prog) > maxInstructions {
			t.Fatalf("Compile(%q): %d instructions", expr, len(prog))
		}
		if _, err := bpf.Assemble(prog); err != nil {
			t.Fatalf("Compile(%q): does not assemble: %v\n%s", expr, err, listing(prog))
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("Compile(%q): does not load: %v\n%s", expr, err, listing(prog))
		}
		for _, s := range samples {
			if n, err := vm.Run(s.frame); err != nil || n != 0 && n != accept {
				t.Fatalf("Compile(%q) on %s: %d, %v", expr, s.name, n, err)
			}
		}
	})
}
