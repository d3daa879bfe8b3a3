package main

import (
	"bytes"
	"strings"
	"testing"
)

// Two runs as gotestsum --rerun-fails writes them: TestA fails with a
// failing subtest and passes on its rerun, TestB passes, TestC fails
// twice.
const events = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"p","Test":"TestA/sub"}
{"Action":"output","Package":"p","Test":"TestA/sub","Output":"    a_test.go:9: deadline passed\n"}
{"Action":"fail","Package":"p","Test":"TestA/sub"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: first\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
{"Action":"fail","Package":"p"}
some build line
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"rerun output\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: second\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
`

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(strings.NewReader(events), &out, 40); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"2 test(s) failed once",
		"=== p TestA: passed on its rerun",
		"a_test.go:9: deadline passed",
		"=== p TestC: failed 2 times",
		"c_test.go:3: first",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"TestB", "rerun output", "c_test.go:3: second"} {
		if strings.Contains(s, not) {
			t.Errorf("output has %q:\n%s", not, s)
		}
	}
}

func TestRunNone(t *testing.T) {
	var out bytes.Buffer
	if err := run(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestB"}`+"\n"), &out, 40); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "none") {
		t.Errorf("got %q", out.String())
	}
}

func TestRunLastLines(t *testing.T) {
	var in strings.Builder
	in.WriteString(`{"Action":"run","Package":"p","Test":"TestL"}` + "\n")
	in.WriteString(`{"Action":"output","Package":"p","Test":"TestL","Output":"    l_test.go:4: the failure\n"}` + "\n")
	for i := range 10 {
		in.WriteString(`{"Action":"output","Package":"p","Test":"TestL","Output":"line ` + string(rune('0'+i)) + `\n"}` + "\n")
	}
	in.WriteString(`{"Action":"fail","Package":"p","Test":"TestL"}` + "\n")
	var out bytes.Buffer
	if err := run(strings.NewReader(in.String()), &out, 12); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "line 7\n    line 8\n    line 9\n") || strings.Contains(s, "line 6") {
		t.Errorf("want the last 3 lines:\n%s", s)
	}
	if s := out.String(); !strings.Contains(s, "    l_test.go:4: the failure\n") {
		t.Errorf("want the test's own message, however far up:\n%s", s)
	}
	if !strings.Contains(out.String(), "failed, and was not run again") {
		t.Errorf("got %q", out.String())
	}
}

func TestRunBadJSON(t *testing.T) {
	if err := run(strings.NewReader("{not json\n"), &bytes.Buffer{}, 3); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad JSON: %v, want an error naming line 1", err)
	}
}
