// Command reruns reads the go test -json events of a run that reran failed
// tests (gotestsum --rerun-fails writes every run's events to one file) and
// prints each test that needed a rerun: whether the rerun passed, and the
// last lines of its first failure, so that a flaky test shows at the end of
// the CI log even when its rerun passed.
//
//	go run ./internal/reruns [-lines 40] events.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	lines := flag.Int("lines", 40, "lines of each first failure to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: reruns [-lines N] events.json")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "reruns:", err)
		os.Exit(1)
	}
	defer f.Close()
	if err := run(f, os.Stdout, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "reruns:", err)
		os.Exit(1)
	}
}

func run(r io.Reader, w io.Writer, lines int) error {
	tests, err := parse(r)
	if err != nil {
		return err
	}
	rerun := 0
	for _, t := range tests {
		if t.Fails > 0 {
			rerun++
		}
	}
	if rerun == 0 {
		fmt.Fprintln(w, "reruns: none, every test passed the first time")
		return nil
	}
	fmt.Fprintf(w, "reruns: %d test(s) failed once and ran again\n", rerun)
	for _, t := range tests {
		if t.Fails == 0 {
			continue
		}
		verdict := "passed on its rerun (flaky: look at its first failure)"
		switch {
		case t.Fails > 1:
			verdict = fmt.Sprintf("failed %d times", t.Fails)
		case t.Passes == 0:
			verdict = "failed, and was not run again"
		}
		fmt.Fprintf(w, "\n=== %s %s: %s\n--- its first failure, last %d lines:\n", t.Package, t.Name, verdict, lines)
		out := t.FirstFailure
		if len(out) > lines {
			out = out[len(out)-lines:]
		}
		for _, l := range out {
			fmt.Fprint(w, "    ", l)
		}
	}
	return nil
}
