package config

import (
	"errors"
	"testing"
)

// FuzzParse checks that no input makes Parse (and the line locator behind
// its messages) panic. `go test` runs only the seeds; fuzz deliberately with
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 20s -fuzzminimizetime 2s ./config
//
// (while the engine minimizes a new input its exec counter stands still;
// that is not a hang).
func FuzzParse(f *testing.F) {
	f.Add(DefaultTOML())
	f.Add([]byte("platform = \"generic\"\n[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN9\"]\nzz = 1\n"))
	f.Add([]byte("[[segment]]\n[segment.x]\n[[segment]]\nports = [[1], {a = 2}]\n"))
	f.Add([]byte("a.\"b.c\".d = 1\n[\"q\\\"x\".y]\nz = 1979-05-27\n"))
	f.Add([]byte("hostname = \"a\"\nplatform = \n"))
	f.Add([]byte("[watchdog]\nTimeout = 5\n[Status]\nport = \"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.toml", data)
		if (c == nil) == (err == nil) {
			t.Fatalf("Parse = %v, %v: want exactly one of config and error", c, err)
		}
		newLocator(data).line("segment[0].ports[1]")
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Errors) == 0 {
				t.Fatalf("Parse error %T %v, want a non-empty *ValidationError", err, err)
			}
			return
		}
		if _, err := c.TOML(); err != nil {
			t.Fatalf("valid config does not encode: %v", err)
		}
	})
}
