package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
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

// decodeStrict decodes the source into v, a pointer to a struct with toml
// tags, and reports syntax errors, type errors (all of them, each at its own
// line) and keys the schema does not have. The caller may have pre-filled v
// with defaults: keys the file omits keep them. decoded reports whether v was
// filled in; unknown keys alone do not stop decoding, so the caller can go on
// to validate and report everything at once.
func (s *source) decodeStrict(v any) (md toml.MetaData, errs []FieldError, decoded bool) {
	t := reflect.TypeOf(v).Elem()
	md, err := toml.Decode(string(s.data), v)
	if err != nil {
		return md, s.decodeErrors(err, t), false
	}
	errs, folded := s.unknownKeys(md, t)
	// A key BurntSushi matched case-insensitively has set a field the file
	// did not name; validating that value would only confuse.
	return md, errs, !folded
}

// decodeErrors explains a failed decode. BurntSushi stops at the first type
// mismatch and loses [[array]] indices, so on failure the file is decoded
// once more into plain maps and checked against the schema here.
func (s *source) decodeErrors(decodeErr error, t reflect.Type) []FieldError {
	var m map[string]any
	if _, err := toml.Decode(string(s.data), &m); err != nil {
		fe := FieldError{File: s.file, Line: 1, Msg: "invalid TOML: " + err.Error()}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			fe.Line = max(pe.Position.Line, 1)
			fe.Msg = "invalid TOML: " + pe.Message
		}
		return []FieldError{fe}
	}
	var errs []FieldError
	s.typeCheck(&errs, "", m, t)
	sortByLine(errs)
	if len(errs) == 0 {
		// The checker missed whatever BurntSushi rejected; report it as is.
		errs = append(errs, FieldError{File: s.file, Line: 1, Msg: decodeErr.Error()})
	}
	return errs
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// typeCheck compares a decoded TOML value with the Go type it is meant for.
func (s *source) typeCheck(errs *[]FieldError, path string, v any, t reflect.Type) {
	bad := func(want string) {
		*errs = append(*errs, s.fieldError(path, "got %s, want %s", describe(v), want))
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		str, ok := v.(string)
		if !ok {
			bad(wantText(t))
			return
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(str)); err != nil {
			*errs = append(*errs, s.fieldError(path, "%v", err))
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad("true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			bad("an integer")
		} else if reflect.New(t).Elem().OverflowInt(n) {
			*errs = append(*errs, s.fieldError(path, "%d is out of range for this field", n))
		}
	case reflect.Slice:
		rv := reflect.ValueOf(v)
		if v == nil || rv.Kind() != reflect.Slice {
			bad("an array")
			return
		}
		for i := range rv.Len() {
			s.typeCheck(errs, indexPath(path, i), rv.Index(i).Interface(), t.Elem())
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			bad("a table")
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			key := fieldKey(f)
			if key == "" {
				continue
			}
			if val, ok := m[key]; ok {
				s.typeCheck(errs, joinPath(path, key), val, f.Type)
			}
		}
	}
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
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	if reflect.ValueOf(v).Kind() == reflect.Slice {
		return "an array"
	}
	return fmt.Sprintf("%T", v) // toml.LocalDate and friends
}

// unknownKeys reports keys the schema does not have. BurntSushi's Undecoded
// finds most; it also matches struct fields case-insensitively, which would
// let `Hostname` silently shadow `hostname`, so exact spelling is checked
// here as well (folded reports such keys). Each unknown key is reported
// once, at its topmost unknown component, and once per [[array]] element it
// appears in.
func (s *source) unknownKeys(md toml.MetaData, t reflect.Type) (errs []FieldError, folded bool) {
	undecoded := map[string]bool{}
	for _, k := range md.Undecoded() {
		undecoded[k.String()] = true
	}
	var unknown []toml.Key
	seen := map[string]bool{}
	for _, k := range md.Keys() {
		n := knownPrefix(t, k)
		var u toml.Key
		switch {
		case n < len(k):
			u = k[:n+1]
			folded = folded || !undecoded[k.String()]
		case undecoded[k.String()]:
			u = k
		default:
			continue
		}
		if seen[u.String()] {
			continue
		}
		seen[u.String()] = true
		unknown = append(unknown, u)
	}

	for _, u := range unknown {
		if coveredByShorter(u, seen) {
			continue
		}
		msg := "unknown key"
		if keys := keysAt(t, u[:len(u)-1]); len(keys) > 0 {
			msg += ", want one of " + strings.Join(keys, ", ")
		}
		var occ []locEntry
		if l := s.locator(); l != nil {
			occ = l.occurrences(u)
		}
		if len(occ) == 0 {
			path := ""
			for _, c := range u {
				path = joinPath(path, c)
			}
			errs = append(errs, FieldError{File: s.file, Line: s.line(path), Field: path, Msg: msg})
			continue
		}
		for _, o := range occ {
			errs = append(errs, FieldError{File: s.file, Line: o.line, Field: o.path, Msg: msg})
		}
	}
	return errs, folded
}

// coveredByShorter reports whether a proper prefix of k is itself unknown.
func coveredByShorter(k toml.Key, unknown map[string]bool) bool {
	for i := 1; i < len(k); i++ {
		if unknown[k[:i].String()] {
			return true
		}
	}
	return false
}

// knownPrefix returns how many leading components of k name schema fields,
// spelled exactly. Every key under a map field (selftest.expect) is known.
func knownPrefix(t reflect.Type, k toml.Key) int {
	for i, name := range k {
		if t.Kind() == reflect.Map {
			return len(k)
		}
		t = structType(t)
		if t == nil {
			return i
		}
		f, ok := fieldByKey(t, name)
		if !ok {
			return i
		}
		t = f.Type
	}
	return len(k)
}

// keysAt lists the keys the schema allows under the table at path parent.
func keysAt(t reflect.Type, parent toml.Key) []string {
	for _, name := range parent {
		t = structType(t)
		if t == nil {
			return nil
		}
		f, ok := fieldByKey(t, name)
		if !ok {
			return nil
		}
		t = f.Type
	}
	if t = structType(t); t == nil {
		return nil
	}
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

// decodeAll is decodeStrict that goes on past type errors, so that one
// wrong value does not hide the problems of the rest of the file: the
// values with a type error are left out (their fields keep their
// defaults), the rest is decoded, and pruned lists the fields left out,
// whose validation would only repeat the type error in other words.
// A file that is not TOML, or whose keys cannot be left out, is decoded
// no further.
func (s *source) decodeAll(v any) (md toml.MetaData, errs []FieldError, pruned []string, decoded bool) {
	t := reflect.TypeOf(v).Elem()
	// Tried on a scratch value first: a failed decode may have filled
	// part of v.
	if _, err := toml.Decode(string(s.data), reflect.New(t).Interface()); err == nil {
		md, errs, decoded = s.decodeStrict(v)
		return md, errs, nil, decoded
	} else if errs = s.decodeErrors(err, t); strings.HasPrefix(errs[0].Msg, "invalid TOML") {
		return md, errs, nil, false
	}
	var m map[string]any
	if _, err := toml.Decode(string(s.data), &m); err != nil {
		return md, errs, nil, false
	}
	for _, e := range errs {
		p := fieldOf(e.Field)
		if p == "" || !removePath(m, p) {
			return md, errs, nil, false
		}
		pruned = append(pruned, p)
	}
	var rest bytes.Buffer
	if err := toml.NewEncoder(&rest).Encode(m); err != nil {
		return md, errs, nil, false
	}
	md2, err := toml.Decode(rest.String(), v)
	if err != nil {
		return md, errs, nil, false
	}
	unknown, folded := s.unknownKeys(md2, t)
	return md2, append(errs, unknown...), pruned, !folded
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

// removePath deletes the value at a path of bare keys and indices
// (segment[0].ports) from decoded TOML, and says whether it was there.
func removePath(m map[string]any, path string) bool {
	keys := strings.Split(path, ".")
	var cur any = m
	for i, k := range keys {
		name, idx, _ := strings.Cut(k, "[")
		if !isBareKey(name) {
			return false
		}
		table, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if i == len(keys)-1 && idx == "" {
			_, there := table[name]
			delete(table, name)
			return there
		}
		cur = table[name]
		for idx != "" {
			n, after, ok := strings.Cut(idx, "]")
			j, err := strconv.Atoi(n)
			if !ok || err != nil {
				return false
			}
			switch arr := cur.(type) {
			case []map[string]any:
				if j >= len(arr) {
					return false
				}
				cur = arr[j]
			case []any:
				if j >= len(arr) {
					return false
				}
				cur = arr[j]
			default:
				return false
			}
			idx = strings.TrimPrefix(after, "[")
		}
	}
	return false
}
