package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// A file is decoded into plain values (see document), which carry no
// positions, and most problems are only found later, by validation of the
// decoded struct. So that every message can still name its line, the
// locator walks the text with go-toml's parser, which reports byte ranges,
// and remembers the line of every field path in the form the messages use:
//
//	hostname, management.port, segment[1].ports[0], services[2]
//
// A file with no problem never needs it: it is built on the first message.

// locator maps field paths to 1-based line numbers.
type locator struct {
	lineStarts []int          // byte offset of the start of each line
	lines      map[string]int // path -> line of its first occurrence
	headers    []header       // [table] and [[array]] headers in document order
}

// header is a table header: the table the keys below it go into.
type header struct {
	line int
	path string // with the index of an [[array]] element: segment[1]
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
		arrays    = map[string]int{} // array-of-tables path -> element count
	)
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			tablePath = ""
			it := e.Key()
			for it.Next() {
				k := it.Node()
				tablePath = joinPath(tablePath, string(k.Data))
				l.add(tablePath, l.lineOf(k))
				if n, ok := arrays[tablePath]; ok && !(it.IsLast() && e.Kind == unstable.ArrayTable) {
					// A reference into an array of tables means its last element.
					tablePath = indexPath(tablePath, n-1)
					continue
				}
				if it.IsLast() && e.Kind == unstable.ArrayTable {
					// Each [[header]] starts a new element, located at
					// the header.
					n := arrays[tablePath]
					arrays[tablePath] = n + 1
					tablePath = indexPath(tablePath, n)
					l.lines[tablePath] = l.lineOf(k)
				}
				if it.IsLast() {
					l.headers = append(l.headers, header{line: l.lineOf(k), path: tablePath})
				}
			}
		case unstable.KeyValue:
			l.addKeyValue(e, tablePath)
		}
	}
	return l
}

// addKeyValue records a possibly dotted key and everything inside its value.
func (l *locator) addKeyValue(kv *unstable.Node, path string) {
	line := 0
	it := kv.Key()
	for it.Next() {
		k := it.Node()
		path = joinPath(path, string(k.Data))
		line = l.lineOf(k)
		l.add(path, line)
	}
	l.addValue(kv.Value(), path, line)
}

// addValue records array elements and inline-table keys of a value.
func (l *locator) addValue(v *unstable.Node, path string, line int) {
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
			l.addValue(el, elPath, elLine)
			i++
		}
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if kv := it.Node(); kv.Kind == unstable.KeyValue {
				l.addKeyValue(kv, path)
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

// add records the line of a key's first occurrence.
func (l *locator) add(path string, line int) {
	if _, ok := l.lines[path]; !ok {
		l.lines[path] = line
	}
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

// tableAt returns the path of the table whose header comes last before
// line, or "" for the top level.
func (l *locator) tableAt(line int) string {
	path := ""
	for _, h := range l.headers {
		if h.line >= line {
			break
		}
		path = h.path
	}
	return path
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
