package config

import (
	"errors"
	"testing"
)

func TestFieldErrorFormat(t *testing.T) {
	tests := []struct {
		e    FieldError
		want string
	}{
		{FieldError{"ncpos.toml", 7, "watchdog.timeout", "too short"}, "ncpos.toml:7: watchdog.timeout: too short"},
		{FieldError{"ncpos.toml", 3, "", "invalid TOML: x"}, "ncpos.toml:3: invalid TOML: x"},
		{FieldError{"ncpos.toml", 0, "hostname", "bad"}, "ncpos.toml: hostname: bad"},
		{FieldError{"", 0, "hostname", "bad"}, "hostname: bad"},
		{FieldError{"", 4, "hostname", "bad"}, "line 4: hostname: bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestValidationErrorJoinsAndUnwraps(t *testing.T) {
	a := FieldError{"f", 1, "a", "x"}
	b := FieldError{"f", 2, "b", "y"}
	var err error = &ValidationError{Errors: []FieldError{a, b}}
	if got, want := err.Error(), "f:1: a: x\nf:2: b: y"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var fe FieldError
	if !errors.As(err, &fe) || fe != a {
		t.Errorf("errors.As = %v, want %v", fe, a)
	}
	if asError(nil) != nil {
		t.Error("asError(nil) != nil")
	}
}
