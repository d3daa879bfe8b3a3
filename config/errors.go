package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// FieldError is one problem in a configuration or profile file. It carries
// the location separately from the message so that tools (the status page,
// `ncpos build`) can point at the line instead of re-parsing text.
type FieldError struct {
	File  string // file name as given to Parse or Load; "" for in-memory configs
	Line  int    // 1-based line; 0 when unknown (no source text)
	Field string // dotted field path such as "segment[0].ports[1]"; "" for syntax errors
	Msg   string // what is wrong and what was expected
}

// Error formats the problem as "file:line: field: msg", leaving out the parts
// that are unknown.
func (e FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ValidationError holds every problem found in one file, so that a person
// can fix them all in one edit instead of one per build.
type ValidationError struct {
	Errors []FieldError
}

// Error lists the problems one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the individual problems to errors.As and errors.Is.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

// asError returns nil for no problems, so callers can `return asError(errs)`.
func asError(errs []FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Errors: errs}
}

// sortByLine puts problems of one file in document order; problems found at
// the same line keep the order in which they were checked.
func sortByLine(errs []FieldError) {
	slices.SortStableFunc(errs, func(a, b FieldError) int { return cmp.Compare(a.Line, b.Line) })
}
