package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseCompare(t *testing.T) {
	a, err := parseBenchArgs([]string{"-compare", "-only", "afxdp", "-rounds", "3", "-trial", "1s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := a.compare
	if o == nil || !slices.Equal(o.Sizes, []int{64, 1518}) || o.Rounds != 3 || o.Duration != time.Second || !slices.Equal(o.Only, []string{"afxdp"}) {
		t.Errorf("-compare -only afxdp -rounds 3 -trial 1s: got %+v", o)
	}
	if a, err := parseBenchArgs([]string{"-sizes", "64"}, io.Discard); err != nil || a.compare != nil {
		t.Errorf("the RFC 2544 bench: compare %v, err %v", a, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-compare", "-json", "x.json"}, "-json applies to the RFC 2544 bench"},
		{[]string{"-compare", "-only", "nothing"}, `-only "nothing" names no setup`},
		{[]string{"-compare", "-sizes", "9018"}, "not a frame size between 64 and 1518"},
		{[]string{"-compare", "-rounds", "0"}, "-rounds 0"},
		{[]string{"-rounds", "3"}, "-rounds applies only with -compare"},
		{[]string{"-only", "afxdp"}, "-only applies only with -compare"},
	} {
		_, err := parseBenchArgs(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}
