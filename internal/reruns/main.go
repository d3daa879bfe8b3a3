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
	"regexp"
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

// testMessage is a line a test logged itself (t.Log, t.Error, t.Fatal):
// "    file_test.go:12: ...", a subtest's indented further.
var testMessage = regexp.MustCompile(`^\s+[\w.-]+_test\.go:\d+: `)

func printTail(w io.Writer, what string, lines []string, n int) {
	fmt.Fprintf(w, "--- %s:\n", what)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		fmt.Fprint(w, "    ", l)
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
		fmt.Fprintf(w, "\n=== %s %s: %s\n", t.Package, t.Name, verdict)
		// The test's own messages first (a console dump it logs would
		// push them out of the last lines), then the output's end.
		var msgs []string
		for _, l := range t.FirstFailure {
			if testMessage.MatchString(l) {
				msgs = append(msgs, l)
			}
		}
		printTail(w, fmt.Sprintf("its first failure's messages, the last %d", lines), msgs, lines)
		printTail(w, fmt.Sprintf("its first failure's output, the last %d lines", lines/4), t.FirstFailure, lines/4)
	}
	return nil
}
