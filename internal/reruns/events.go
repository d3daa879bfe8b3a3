package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of go test -json (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// test is a top-level test over every run of it: its subtests' output
// counts as its own.
type test struct {
	Package, Name string
	Fails, Passes int
	output        []string // of the run under way
	FirstFailure  []string // the output of its first failed run
}

// parse reads the events of one or more runs in the order they were
// written, and returns the top-level tests in the order they first ran.
func parse(r io.Reader) ([]*test, error) {
	var order []*test
	byName := map[string]*test{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // build output that gotestsum passed through
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if e.Test == "" {
			continue
		}
		root, _, sub := strings.Cut(e.Test, "/")
		key := e.Package + " " + root
		t := byName[key]
		if t == nil {
			t = &test{Package: e.Package, Name: root}
			byName[key] = t
			order = append(order, t)
		}
		switch {
		case e.Action == "run" && !sub:
			t.output = nil
		case e.Action == "output":
			t.output = append(t.output, e.Output)
		case e.Action == "fail" && !sub:
			if t.Fails == 0 {
				t.FirstFailure = t.output
			}
			t.Fails++
		case e.Action == "pass" && !sub:
			t.Passes++
		}
	}
	return order, sc.Err()
}
