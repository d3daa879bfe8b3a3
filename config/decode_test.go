package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// A key that differs from a field only in case is unknown: it must neither
// set the field nor let validation run on a value the file did not mean.
func TestCaseFoldedKey(t *testing.T) {
	got := problems(t, "Hostname = \"x\"\n[status]\nport = 0\n"+seg)
	want := []string{`ncpos.toml:1: Hostname: unknown key, want one of hostname, platform, services, management, status, watchdog, forwarder, bypass, segment, syslog, snmp, selftest, auth, time`}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Decoded alone, the folded key leaves the field as it was.
	src := &source{file: "p.toml", data: []byte("Name = \"x\"\n")}
	p := &Profile{Name: "kept"}
	errs, decoded := src.decodeStrict(p)
	if decoded || len(errs) != 1 || errs[0].Field != "Name" || p.Name != "kept" {
		t.Errorf("decodeStrict(Name = ...) = %v, %v, name %q; want Name unknown, not decoded, name kept", errs, decoded, p.Name)
	}
}

// Defaults stay for what a file leaves out; an array the file gives
// replaces the default, a table of sizes adds to it.
func TestDecodeKeepsDefaults(t *testing.T) {
	c, err := Parse("d.toml", []byte("[watchdog]\ntimeout = \"20s\"\n[selftest]\nsizes = [64]\n[selftest.expect]\n\"64\" = \"90%\"\n"+seg))
	if err != nil {
		t.Fatal(err)
	}
	def := defaults()
	if c.Watchdog.Timeout != Seconds(20) || c.Watchdog.Interval != def.Watchdog.Interval || c.Watchdog.Device != def.Watchdog.Device {
		t.Errorf("watchdog = %+v, want timeout 20s and the other defaults", c.Watchdog)
	}
	if !slices.Equal(c.SelfTest.Sizes, []int{64}) {
		t.Errorf("selftest.sizes = %v, want [64]", c.SelfTest.Sizes)
	}
	if want := map[string]string{anySize: defaultExpect, "64": "90%"}; !maps.Equal(c.SelfTest.Expect, want) {
		t.Errorf("selftest.expect = %v, want %v", c.SelfTest.Expect, want)
	}
}

// Type errors anywhere in the schema are found and reported at their line:
// in [[array]] elements, map fields and pointer fields.
func TestDecodeTypeErrorsEverywhere(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"map field", "[selftest.expect]\n\"64\" = 5\n" + seg, []string{
			`ncpos.toml:2: selftest.expect.64: got integer 5, want a string`}},
		{"value for a map field", "[selftest]\nexpect = 3\n" + seg, []string{
			`ncpos.toml:2: selftest.expect: got integer 3, want a table`}},
		{"dates", "hostname = 1979-05-27\nplatform = 07:00:00\nservices = 1979-05-27T07:00:00\n" + seg, []string{
			`ncpos.toml:1: hostname: got date 1979-05-27, want a string`,
			`ncpos.toml:2: platform: got time 07:00:00, want a string`,
			`ncpos.toml:3: services: got local date/time 1979-05-27T07:00:00, want an array`}},
		{"type error in one element, unknown key in the next", "[[segment]]\nname = 5\nports = [\"LAN1\", \"LAN2\"]\n" +
			"[[segment]]\nname = \"b\"\nports = [\"LAN3\", \"LAN4\"]\nzz = 1\n", []string{
			`ncpos.toml:2: segment[0].name: got integer 5, want a string`,
			`ncpos.toml:7: segment[1].zz: unknown key, want one of name, ports, bypass, mtu`}},
		{"inline array of tables", "segment = [{name = \"a\", ports = [\"LAN1\", \"LAN2\"], zz = 1}]\n", []string{
			`ncpos.toml:1: segment[0].zz: unknown key, want one of name, ports, bypass, mtu`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	src := &source{file: "p.toml", data: []byte(bypassHead + "[[bypass_pair]]\nname = \"pair1\"\nports = [\"LAN1\", \"LAN2\"]\n" +
		"backend = \"lanner\"\n[bypass_pair.lanner]\nbus = \"3\"\n")}
	errs, decoded := src.decodeStrict(&Profile{})
	if want := `p.toml:18: bypass_pair[0].lanner.bus: got string "3", want an integer`; decoded || len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("decodeStrict = %v, %v; want %s, not decoded", errs, decoded, want)
	}
}

// go-toml's messages are reworded where they would puzzle the writer of the
// file: characters as typed, duplicate keys named in full.
func TestSyntaxMessages(t *testing.T) {
	tests := []struct{ text, want string }{
		{"hostname = \"a\"\n!b = 2\n", `ncpos.toml:2: invalid TOML: invalid character at start of key: '!'`},
		{"hostname = \"a\" x\n", `ncpos.toml:1: invalid TOML: expected newline but got 'x'`},
		{"[status]\nextra.a = 1\nextra.a = 2\n", `ncpos.toml:3: invalid TOML: key status.extra.a is already defined`},
		{"[[segment]]\nname = \"a\"\n[[segment]]\nname = \"b\"\nname = \"c\"\n", `ncpos.toml:5: invalid TOML: key segment[1].name is already defined`},
		{"[a.b]\nx = 1\n[a]\nb = 2\n", `ncpos.toml:4: invalid TOML: key a.b is already defined`},
		{"[x]\n\"q.r\" = 1\n\"q.r\" = 2\n", `ncpos.toml:3: invalid TOML: key x."q.r" is already defined`},
		{"a = 1\n[a]\n", `ncpos.toml:2: invalid TOML: key a should be a table, not a value`},
	}
	for _, tt := range tests {
		got := problems(t, tt.text)
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("problems(%q) = %q, want %s", tt.text, got, tt.want)
		}
	}
}

func TestQuoteCodePoints(t *testing.T) {
	tests := []struct{ in, want string }{
		{"unexpected character U+000A at start of value", `unexpected character '\n' at start of value`},
		{"expected newline but got U+0079 'y'", `expected newline but got 'y'`},
		{"got U+0027 ''' here", `got '\'' here`},
		{"U+1F600 '😀' and U+0009", `'😀' and '\t'`},
		{"no U+ code point, U+12", "no U+ code point, U+12"},
	}
	for _, tt := range tests {
		if got := quoteCodePoints(tt.in); got != tt.want {
			t.Errorf("quoteCodePoints(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDocumentDefines(t *testing.T) {
	doc, fe := (&source{data: []byte("[management]\nport = \"MGMT\"\n[bypass]\n")}).parseDocument()
	if fe != nil {
		t.Fatal(fe)
	}
	for _, tt := range []struct {
		keys []string
		want bool
	}{
		{[]string{"management", "port"}, true},
		{[]string{"management", "dhcp"}, false},
		{[]string{"bypass"}, true},
		{[]string{"bypass", "budget"}, false},
		{[]string{"management", "port", "x"}, false},
	} {
		if got := doc.defines(tt.keys...); got != tt.want {
			t.Errorf("defines(%v) = %v, want %v", tt.keys, got, tt.want)
		}
	}
}

// An empty key is unknown like any other, not the schema's untagged
// fields'.
func TestEmptyKey(t *testing.T) {
	got := problems(t, "\"\" = 1\n"+seg)
	if len(got) != 1 || !strings.HasPrefix(got[0], `ncpos.toml:1: "": unknown key, want one of hostname,`) {
		t.Errorf("problems of an empty key: %q", got)
	}
}
