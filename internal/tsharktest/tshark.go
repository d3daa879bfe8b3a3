// Package tsharktest reads capture files with Debian's tshark, so that
// tests hold what the box writes to what Wireshark reads.
package tsharktest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/internal/testenv"
)

// Run runs tshark -r file with args and returns its standard output; a
// failure fails t with tshark's standard error.
func Run(t testing.TB, file string, args ...string) []byte {
	t.Helper()
	bin := testenv.LookPath(t, testenv.Tools, "tshark", "tshark")
	out, err := exec.Command(bin, append([]string{"-r", file}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("tshark -r %s %s: %v\n%s", file, strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return out
}

// Fields returns, per frame, the fields named, as tshark -T fields prints
// them (several values of one field joined by "|").
func Fields(t testing.TB, file string, fields ...string) [][]string {
	t.Helper()
	args := []string{"-T", "fields", "-E", "separator=/t", "-E", "aggregator=|"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimSuffix(string(Run(t, file, args...)), "\n"), "\n") {
		if l != "" {
			out = append(out, strings.Split(l, "\t"))
		}
	}
	return out
}

// Frames returns each frame's bytes as tshark reads them (its JSON
// export's raw hex of the frame).
func Frames(t testing.TB, file string) [][]byte {
	t.Helper()
	var raw []struct {
		Source struct {
			Layers struct {
				Frame []any `json:"frame_raw"`
			} `json:"layers"`
		} `json:"_source"`
	}
	if err := json.Unmarshal(Run(t, file, "-T", "json", "-x", "-j", "frame"), &raw); err != nil {
		t.Fatalf("tshark's JSON of %s: %v", file, err)
	}
	out := make([][]byte, len(raw))
	for i, r := range raw {
		if len(r.Source.Layers.Frame) == 0 {
			t.Fatalf("tshark gives no bytes for frame %d of %s", i+1, file)
		}
		s, _ := r.Source.Layers.Frame[0].(string)
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatalf("tshark's bytes of frame %d of %s: %v", i+1, file, err)
		}
		out[i] = b
	}
	return out
}
