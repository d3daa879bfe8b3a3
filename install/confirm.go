package install

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// errNoTerminal is returned (wrapped) when confirmation is needed but
// standard input is not a terminal: a script or a pipe must not hang on a
// question nobody sees, nor have its input taken for an answer.
var errNoTerminal = errors.New("standard input is not a terminal, so there is no one to ask (pass -yes to write without asking)")

// TerminalConfirm returns a Confirm function that prints the prompt to out
// and reads one line from in, which must be a terminal. Only "yes" agrees.
// An interrupt (ctx) while waiting ends the question.
func TerminalConfirm(in *os.File, out io.Writer) func(ctx context.Context, prompt string) (bool, error) {
	return func(ctx context.Context, prompt string) (bool, error) {
		if _, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err != nil {
			return false, errNoTerminal
		}
		fmt.Fprint(out, prompt)
		type answer struct {
			s   string
			err error
		}
		ch := make(chan answer, 1)
		go func() {
			s, err := bufio.NewReader(in).ReadString('\n')
			ch <- answer{s, err}
		}()
		select {
		case <-ctx.Done():
			fmt.Fprintln(out)
			return false, ctx.Err()
		case a := <-ch:
			if a.err != nil && a.s == "" {
				return false, fmt.Errorf("reading the answer: %w", a.err)
			}
			return strings.EqualFold(strings.TrimSpace(a.s), "yes"), nil
		}
	}
}
