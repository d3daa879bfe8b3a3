package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// source is the text being decoded or validated, kept so that every message
// can name the file and line.
type source struct {
	file string
	data []byte   // nil for an in-memory Config: lines are then unknown (0)
	loc  *locator // built on first use; a valid file never needs it
	// mem is the memory of the box the configuration is loaded on, in
	// bytes; 0 when it is not known (building an image on a host).
	mem uint64
	// cpus is how many CPUs the box may have (per-CPU memory is kept for
	// each); 0 when it is not known.
	cpus int
}

// locator returns the line index of the text, or nil without source text.
func (s *source) locator() *locator {
	if s.data == nil {
		return nil
	}
	if s.loc == nil {
		s.loc = newLocator(s.data)
	}
	return s.loc
}

// line returns the line of a field path, or 0 without source text.
func (s *source) line(path string) int {
	if l := s.locator(); l != nil {
		return l.line(path)
	}
	return 0
}

// fieldError builds a FieldError for path.
func (s *source) fieldError(path, format string, args ...any) FieldError {
	return FieldError{File: s.file, Line: s.line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
}

// document is a configuration file decoded into plain TOML values: tables
// are map[string]any, arrays []any, integers int64. Unlike a struct it
// remembers which keys the file spells out, and it keeps every key exactly as
// written, which the schema checks need.
type document map[string]any

// defines reports whether the document gives a value at the key path, e.g.
// defines("management", "port"): a field it leaves out gets a default that
// may depend on other fields.
func (d document) defines(keys ...string) bool {
	var cur any = map[string]any(d)
	for _, k := range keys {
		table, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = table[k]; !ok {
			return false
		}
	}
	return true
}

// decodeStrict decodes the source into v, a pointer to a struct with toml
// tags, and reports syntax errors, type errors and keys the schema does not
// have. decoded reports whether v holds what the file says: a type error
// stops there, unknown keys alone do not, so the caller can go on to
// validate and report everything at once.
func (s *source) decodeStrict(v any) (errs []FieldError, decoded bool) {
	_, errs, pruned, decoded := s.decodeAll(v)
	return errs, decoded && len(pruned) == 0
}

// decodeAll is decodeStrict that goes on past type errors, so that one
// wrong value does not hide the problems of the rest of the file. The file
// is decoded once into a document and checked against the schema of v: all
// type errors (each at its own line), and unknown keys, once at their
// topmost unknown component and once per [[array]] element they appear in.
// Values with a type error and unknown keys are left out of the document,
// and the rest is decoded into v; the caller may have pre-filled v with
// defaults, which the fields left out keep. pruned lists the fields left
// out for a type error, whose validation would only repeat it in other
// words. A file that is not TOML is decoded no further, and neither is one
// with a key that differs from a field only in case (`Hostname`): its writer
// meant that field, and validating the file without its value would only
// confuse.
func (s *source) decodeAll(v any) (doc document, errs []FieldError, pruned []string, decoded bool) {
	doc, syntaxErr := s.parseDocument()
	if syntaxErr != nil {
		return nil, []FieldError{*syntaxErr}, nil, false
	}
	t := reflect.TypeOf(v).Elem()
	s.typeCheck(&errs, "", map[string]any(doc), t)
	for _, e := range errs {
		pruned = append(pruned, fieldOf(e.Field))
	}
	folded := s.unknownKeys(&errs, "", map[string]any(doc), t)
	sortByLine(errs)
	if folded {
		return doc, errs, pruned, false
	}
	if err := doc.decodeInto(v); err != nil {
		// The checks above let through nothing the decoder refuses;
		// should they miss something, it is still reported.
		return doc, append(errs, FieldError{File: s.file, Line: 1, Msg: err.Error()}), pruned, false
	}
	return doc, errs, pruned, true
}

// parseDocument decodes the text into plain TOML values, or explains at
// which line it is not TOML.
func (s *source) parseDocument() (document, *FieldError) {
	var m map[string]any
	if err := toml.Unmarshal(s.data, &m); err != nil {
		fe := s.syntaxError(err)
		return nil, &fe
	}
	if m == nil {
		m = map[string]any{}
	}
	return document(m), nil
}

// syntaxError reports text that is not TOML at the line go-toml found it,
// in words for the person who writes the file rather than the parser.
func (s *source) syntaxError(err error) FieldError {
	fe := FieldError{File: s.file, Line: 1, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		fe.Line = max(row, 1)
		fe.Msg = quoteCodePoints(fe.Msg)
		if full, ok := s.duplicateKey(fe.Msg, de.Key(), fe.Line); ok {
			fe.Msg = "key " + full + " is already defined"
		}
	}
	fe.Msg = "invalid TOML: " + fe.Msg
	return fe
}

// duplicateKey names in full the key of go-toml's "key b is already
// defined" at line: go-toml names only the key's last component, and its
// Key only the components below the table the key is in, so the table
// comes from the text (status.extra.b, segment[1].name).
func (s *source) duplicateKey(msg string, key toml.Key, line int) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "key ")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, " is already defined")
	l := s.locator()
	if !ok || len(key) == 0 || key[len(key)-1] != name || l == nil {
		return "", false
	}
	full := l.tableAt(line)
	for _, k := range key {
		full = joinPath(full, k)
	}
	return full, true
}

// quoteCodePoints replaces the %#U notation of characters in a message
// ("U+000A", "U+0061 'a'") by the character in Go quotes ('\n', 'a').
func quoteCodePoints(msg string) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, "U+")
		if i < 0 {
			break
		}
		j := i + 2
		for j < len(msg) && j-i < 8 && strings.IndexByte("0123456789ABCDEF", msg[j]) >= 0 {
			j++
		}
		n, err := strconv.ParseUint(msg[i+2:j], 16, 32)
		if err != nil || j-i < 6 {
			b.WriteString(msg[:i+2])
			msg = msg[i+2:]
			continue
		}
		r := rune(n)
		b.WriteString(msg[:i])
		b.WriteString(strconv.QuoteRune(r))
		msg = strings.TrimPrefix(msg[j:], " '"+string(r)+"'")
	}
	b.WriteString(msg)
	return b.String()
}

// decodeInto decodes a checked document into v. go-toml decodes structs
// from text only, so the document is encoded again first. Its keys are then
// all schema keys, spelled exactly, so go-toml's case-insensitive matching
// of struct fields finds nothing to fold; an unknown key left would be an
// error.
func (d document) decodeInto(v any) error {
	text, err := toml.Marshal(map[string]any(d))
	if err != nil {
		return fmt.Errorf("encoding the checked configuration: %w", err)
	}
	dec := toml.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding the checked configuration: %w", err)
	}
	return nil
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// typeCheck compares a decoded TOML value with the Go type it is meant for,
// reports every mismatch, and says whether v fits. A table's entries that do
// not fit are deleted from it, so that the rest of the file can still be
// decoded; an array with one bad element is left out whole, as its field's
// value.
func (s *source) typeCheck(errs *[]FieldError, path string, v any, t reflect.Type) bool {
	bad := func(want string) bool {
		*errs = append(*errs, s.fieldError(path, "got %s, want %s", describe(v), want))
		return false
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		str, ok := v.(string)
		if !ok {
			return bad(wantText(t))
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(str)); err != nil {
			*errs = append(*errs, s.fieldError(path, "%v", err))
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.typeCheck(errs, path, v, t.Elem())
	case reflect.String:
		if _, ok := v.(string); !ok {
			return bad("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return bad("true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			return bad("an integer")
		}
		if reflect.New(t).Elem().OverflowInt(n) {
			*errs = append(*errs, s.fieldError(path, "%d is out of range for this field", n))
			return false
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return bad("an array")
		}
		fits := true
		for i, el := range arr {
			fits = s.typeCheck(errs, indexPath(path, i), el, t.Elem()) && fits
		}
		return fits
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("a table")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !s.typeCheck(errs, joinPath(path, k), m[k], t.Elem()) {
				delete(m, k)
			}
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("a table")
		}
		for i := range t.NumField() {
			f := t.Field(i)
			key := fieldKey(f)
			if val, ok := m[key]; ok && key != "" && !s.typeCheck(errs, joinPath(path, key), val, f.Type) {
				delete(m, key)
			}
		}
	}
	return true
}

func wantText(t reflect.Type) string {
	if t == reflect.TypeFor[Duration]() {
		return `a duration string such as "30s"`
	}
	return "a string"
}

// describe names a decoded TOML value's type, with the value for scalars.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("float %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case time.Time:
		return "date/time " + v.Format(time.RFC3339Nano)
	case toml.LocalDateTime:
		return "local date/time " + v.String()
	case toml.LocalDate:
		return "date " + v.String()
	case toml.LocalTime:
		return "time " + v.String()
	case map[string]any:
		return "a table"
	case []any:
		return "an array"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T", v)
}

// unknownKeys reports the keys of v that its schema type t does not have,
// spelled exactly, and deletes them so that they cannot reach the decoder.
// Each is reported once, at its topmost unknown component, and once per
// array element it appears in. Every key of a map field (selftest.expect)
// is known. folded says whether a key differs from a field only in case.
func (s *source) unknownKeys(errs *[]FieldError, path string, v any, t reflect.Type) (folded bool) {
	switch t.Kind() {
	case reflect.Pointer:
		return s.unknownKeys(errs, path, v, t.Elem())
	case reflect.Slice:
		arr, _ := v.([]any)
		for i, el := range arr {
			folded = s.unknownKeys(errs, indexPath(path, i), el, t.Elem()) || folded
		}
	case reflect.Map:
		m, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			folded = s.unknownKeys(errs, joinPath(path, k), m[k], t.Elem()) || folded
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok || structType(t) == nil {
			return false
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if f, ok := fieldByKey(t, k); ok {
				folded = s.unknownKeys(errs, joinPath(path, k), m[k], f.Type) || folded
				continue
			}
			*errs = append(*errs, s.fieldError(joinPath(path, k), "%s", unknownKeyMsg(t)))
			delete(m, k)
			folded = folded || foldsToField(t, k)
		}
	}
	return folded
}

// unknownKeyMsg says that a key is unknown and which keys the table t takes.
func unknownKeyMsg(t reflect.Type) string {
	keys := keysOf(t)
	if len(keys) == 0 {
		return "unknown key"
	}
	return "unknown key, want one of " + strings.Join(keys, ", ")
}

// foldsToField says whether key names a field of t in other letter case.
func foldsToField(t reflect.Type, key string) bool {
	return slices.ContainsFunc(keysOf(t), func(k string) bool { return strings.EqualFold(k, key) })
}

// keysOf lists the keys of the struct t in schema order.
func keysOf(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if k := fieldKey(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// structType returns the struct a TOML table decodes into (looking through
// slices for [[arrays]]), or nil for values that are not tables.
func structType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	if key == "" {
		return reflect.StructField{}, false // untagged fields have no key
	}
	for i := range t.NumField() {
		if f := t.Field(i); fieldKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldKey is the TOML key of a struct field, or "" if it has none.
func fieldKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "-" || name == "" {
		return ""
	}
	return name
}

// fieldOf is the field a path's value belongs to: an element's type error
// (segment[0].ports[1]) leaves out the whole array (segment[0].ports).
func fieldOf(path string) string {
	for strings.HasSuffix(path, "]") {
		i := strings.LastIndexByte(path, '[')
		if i < 0 {
			return ""
		}
		path = path[:i]
	}
	return path
}

// within says whether path is field or lies inside it.
func within(path, field string) bool {
	return path == field || strings.HasPrefix(path, field+".") || strings.HasPrefix(path, field+"[")
}
