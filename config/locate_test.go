package config

import (
	"testing"
)

const locateDoc = `# comment
hostname = "a"
services = [
  "one",
  # comment inside
  "two",
]

[management]
port = "MGMT"
"odd.key" = 1
dotted.inner = 2

[[segment]]
name = "s1"
ports = ["LAN1", "LAN2"]

[[segment]]
name = "s2"
ports = [
  "LAN3",
  "LAN4",
]
tbl = { a = 1, b = [1,
  2] }
nested = [[1], [
  2]]

[segment.sub]
x = 1
`

func TestLocatorLine(t *testing.T) {
	l := newLocator([]byte(locateDoc))
	tests := []struct {
		path string
		want int
	}{
		{"hostname", 2},
		{"services", 3},
		{"services[0]", 4},
		{"services[1]", 6},
		{"services[2]", 3}, // no such element: the key's line
		{"management", 9},
		{"management.port", 10},
		{`management."odd.key"`, 11},
		{"management.dotted", 12},
		{"management.dotted.inner", 12},
		{"management.address", 9}, // missing field: its table header
		{"segment", 14},
		{"segment[0]", 14},
		{"segment[0].ports[1]", 16},
		{"segment[0].bypass", 14},
		{"segment[1]", 18},
		{"segment[1].name", 19},
		{"segment[1].ports[0]", 21},
		{"segment[1].ports[1]", 22},
		{"segment[1].tbl.a", 24},
		{"segment[1].tbl.b[1]", 25},
		{"segment[1].nested[1]", 27}, // arrays carry no position: their first value's line
		{"segment[1].nested[1][0]", 27},
		{"segment[1].sub", 29},
		{"segment[1].sub.x", 30},
		{"segment[5].name", 14},
		{"watchdog.timeout", 1}, // missing table: line 1
		{"", 1},
	}
	for _, tt := range tests {
		if got := l.line(tt.path); got != tt.want {
			t.Errorf("line(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

// tableAt names the table a key-value line belongs to, [[array]] index
// included, for messages that go-toml gives relative to it.
func TestLocatorTableAt(t *testing.T) {
	l := newLocator([]byte(locateDoc))
	tests := []struct {
		line int
		want string
	}{
		{2, ""},
		{9, ""}, // a header line is not inside its own table
		{10, "management"},
		{15, "segment[0]"},
		{19, "segment[1]"},
		{30, "segment[1].sub"},
	}
	for _, tt := range tests {
		if got := l.tableAt(tt.line); got != tt.want {
			t.Errorf("tableAt(%d) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestLocatorStopsAtSyntaxError(t *testing.T) {
	l := newLocator([]byte("a = 1\nb = \nc = 3\n"))
	if got := l.line("a"); got != 1 {
		t.Errorf("line(a) = %d, want 1", got)
	}
	if got := l.line("c"); got != 1 {
		t.Errorf("line(c) = %d, want fallback 1", got)
	}
}

func TestParentPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"segment[1].ports[0]", "segment[1].ports"},
		{"segment[1].ports", "segment[1]"},
		{"segment[1]", "segment"},
		{"segment", ""},
		{`a."b.c"`, "a"},
		{`a."b\"c.d"`, "a"},
		{`"x.y"`, ""},
	}
	for _, tt := range tests {
		if got := parentPath(tt.in); got != tt.want {
			t.Errorf("parentPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
