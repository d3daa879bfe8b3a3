package config

import "regexp"

// tableNames checks the names of the entries of one table: each valid, and
// none used by an earlier entry. Ports, bypass pairs and segments are
// referred to by name from elsewhere in the configuration, so a name
// must say which one it means.
type tableNames struct {
	kind  string         // what an entry is, in messages: "segment"
	table string         // the table, as paths spell it: "segment"
	valid *regexp.Regexp // what a name may be
	want  string         // that, in words
	seen  map[string]int // name -> index of the entry that has it
}

// check checks the name of entry i of the table, at path f.
func (n *tableNames) check(add addFunc, f string, i int, name string) {
	if n.seen == nil {
		n.seen = map[string]int{}
	}
	switch j, dup := n.seen[name]; {
	case !n.valid.MatchString(name):
		add(f+".name", "%q is not a valid %s name, want %s", name, n.kind, n.want)
	case dup:
		add(f+".name", "duplicate %s name %q, already used by %s[%d]", n.kind, name, n.table, j)
	default:
		n.seen[name] = i
	}
}

// segmentNames checks names of segments and of bypass pairs, which
// share their form: both become parts of interface and BPF map names.
func segmentNames(kind, table string) *tableNames {
	return &tableNames{kind: kind, table: table, valid: segmentNameRE, want: `1-15 of a-z, 0-9 and "-"`}
}
