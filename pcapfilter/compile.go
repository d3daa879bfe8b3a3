package pcapfilter

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// accept is what a program returns for a frame it accepts: the number of
// bytes to keep, libpcap's default snapshot length, so the whole frame.
// A rejected frame gets 0.
const accept = 262144

// maxInstructions is the most a classic BPF program may have (the
// kernel's BPF_MAXINSNS).
const maxInstructions = 4096

// A SyntaxError is an expression that cannot be compiled: malformed, or
// outside the subset this package supports.
type SyntaxError struct {
	Offset int    // byte offset in the expression of what is wrong
	Msg    string // what is wrong, naming it
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("filter: at %d: %s", e.Offset, e.Msg) }

// errTooLong is returned (wrapped) for an expression whose program would
// not fit in MaxInstructions.
var errTooLong = fmt.Errorf("more than classic BPF's limit of %d instructions", maxInstructions)

// fail stops the compilation with a SyntaxError; Compile returns it.
// Panicking keeps the parser free of error plumbing, as in go/parser.
func fail(pos int, format string, args ...any) {
	panic(&SyntaxError{Offset: pos, Msg: fmt.Sprintf(format, args...)})
}

// Compile parses expr (pcap-filter(7) syntax, the subset the package
// documentation lists) and returns a classic BPF program for Ethernet
// frames that returns Accept for a frame the expression matches and 0
// for one it does not. An empty expression matches every frame.
func Compile(expr string) (prog []bpf.Instruction, err error) {
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*SyntaxError)
			if !ok {
				panic(r)
			}
			prog, err = nil, se
		}
	}()
	p := &parser{src: expr, toks: lex(expr), lay: layers{linkType: 12, linkPayload: 14}}
	if p.peek().kind == tEOF {
		return []bpf.Instruction{bpf.RetConstant{Val: accept}}, nil
	}
	n, _ := p.expr(quals{})
	if t := p.peek(); isOp(t, ")") {
		fail(t.pos, `")" without a matching "("`)
	} else if t.kind != tEOF {
		fail(t.pos, `expected "and" or "or" before %q`, t.text)
	}
	prog, ok := generate(n)
	switch {
	case !ok || len(prog) > maxInstructions:
		return nil, fmt.Errorf("filter: the expression needs %w", errTooLong)
	case len(prog) == 1 && prog[0] == bpf.RetConstant{Val: 0}:
		fail(0, "the expression matches no frame") // libpcap refuses it too
	}
	return prog, nil
}
