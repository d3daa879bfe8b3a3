package config

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// BurntSushi/toml, which decodes the file, keeps key positions to itself
// (v1.6.0 exports MetaData.Keys but no lines, and keys inside [[arrays]] lose
// their index). The locator therefore walks the same text once more with
// go-toml's unstable parser, which reports byte ranges, and remembers the line
// of every field path in the form the error messages use:
//
//	hostname, management.port, segment[1].ports[0], services[2]

// locEntry is one located key.
type locEntry struct {
	keys []string // key components without indices: ["segment", "ports"]
	path string   // display path with indices: "segment[1].ports"
	line int
}

// locator maps field paths to 1-based line numbers.
type locator struct {
	lineStarts []int          // byte offset of the start of each line
	lines      map[string]int // path -> line of its first occurrence
	entries    []locEntry     // keys (not array elements), in document order
}

// newLocator indexes data. Text that go-toml cannot parse is indexed up to
// the first error; lookups of later paths fall back to enclosing paths.
func newLocator(data []byte) *locator {
	l := &locator{lineStarts: []int{0}, lines: map[string]int{}}
	for i, c := range data {
		if c == '\n' {
			l.lineStarts = append(l.lineStarts, i+1)
		}
	}

	var (
		p         unstable.Parser
		tablePath string
		tableKeys []string
		arrays    = map[string]int{} // array-of-tables path -> element count
	)
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			tablePath, tableKeys = "", nil
			it := e.Key()
			for it.Next() {
				k := it.Node()
				name := string(k.Data)
				tableKeys = append(tableKeys, name)
				tablePath = joinPath(tablePath, name)
				if n, ok := arrays[tablePath]; ok && !(it.IsLast() && e.Kind == unstable.ArrayTable) {
					// A reference into an array of tables means its last element.
					l.add(tableKeys, tablePath, l.lineOf(k))
					tablePath = indexPath(tablePath, n-1)
					continue
				}
				l.add(tableKeys, tablePath, l.lineOf(k))
				if it.IsLast() && e.Kind == unstable.ArrayTable {
					// Each [[header]] starts a new element; its index is
					// located but is not a separate key.
					n := arrays[tablePath]
					arrays[tablePath] = n + 1
					tablePath = indexPath(tablePath, n)
					l.lines[tablePath] = l.lineOf(k)
				}
			}
		case unstable.KeyValue:
			l.addKeyValue(e, tablePath, tableKeys)
		}
	}
	return l
}

// addKeyValue records a possibly dotted key and everything inside its value.
func (l *locator) addKeyValue(kv *unstable.Node, path string, keys []string) {
	keys = slices.Clone(keys)
	line := 0
	it := kv.Key()
	for it.Next() {
		k := it.Node()
		name := string(k.Data)
		keys = append(keys, name)
		path = joinPath(path, name)
		line = l.lineOf(k)
		l.add(keys, path, line)
	}
	l.addValue(kv.Value(), path, keys, line)
}

// addValue records array elements and inline-table keys of a value.
func (l *locator) addValue(v *unstable.Node, path string, keys []string, line int) {
	switch v.Kind {
	case unstable.Array:
		i := 0
		it := v.Children()
		for it.Next() {
			el := it.Node()
			if el.Kind == unstable.Comment {
				continue
			}
			elPath := indexPath(path, i)
			elLine := line
			if first := firstRaw(el); first != nil {
				elLine = l.lineOf(first)
			}
			if _, ok := l.lines[elPath]; !ok {
				l.lines[elPath] = elLine
			}
			l.addValue(el, elPath, keys, elLine)
			i++
		}
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if kv := it.Node(); kv.Kind == unstable.KeyValue {
				l.addKeyValue(kv, path, keys)
			}
		}
	}
}

// firstRaw returns the first node of v (or its descendants) that carries a
// byte range; arrays have none of their own.
func firstRaw(v *unstable.Node) *unstable.Node {
	switch v.Kind {
	case unstable.Array:
		it := v.Children()
		for it.Next() {
			if n := firstRaw(it.Node()); n != nil {
				return n
			}
		}
		return nil
	case unstable.Comment, unstable.Invalid:
		return nil
	}
	return v
}

func (l *locator) add(keys []string, path string, line int) {
	if _, ok := l.lines[path]; ok {
		return
	}
	l.lines[path] = line
	l.entries = append(l.entries, locEntry{keys: slices.Clone(keys), path: path, line: line})
}

func (l *locator) lineOf(n *unstable.Node) int {
	off := int(n.Raw.Offset)
	return sort.Search(len(l.lineStarts), func(i int) bool { return l.lineStarts[i] > off })
}

// line returns the line of path, or of its nearest enclosing path that the
// file spells out (a missing field is reported at its table header), or 1.
func (l *locator) line(path string) int {
	for path != "" {
		if n, ok := l.lines[path]; ok {
			return n
		}
		path = parentPath(path)
	}
	return 1
}

// occurrences returns every located key whose components equal keys, for
// turning BurntSushi's index-less keys (segment.zz) into segment[2].zz.
func (l *locator) occurrences(keys []string) []locEntry {
	var out []locEntry
	for _, e := range l.entries {
		if slices.Equal(e.keys, keys) {
			out = append(out, e)
		}
	}
	return out
}

// joinPath appends a key to a path, quoting keys that are not bare.
func joinPath(path, key string) string {
	if !isBareKey(key) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// parentPath drops the last key or index of a path: segment[1].ports[0] ->
// segment[1].ports -> segment[1] -> segment -> "".
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	// Skip over a quoted last key, which may contain dots.
	end := len(path)
	if strings.HasSuffix(path, `"`) && len(path) > 1 {
		for i := len(path) - 2; i >= 0; i-- {
			if path[i] == '"' && (i == 0 || path[i-1] != '\\') {
				end = i
				break
			}
		}
	}
	if i := strings.LastIndexByte(path[:end], '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

func isBareKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
