package testenv

import (
	"errors"
	"testing"
)

// fakeT records whether Need skipped or failed.
type fakeT struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Skip(...any)           { f.skipped = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }

func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		value      string
		missing    error
		skip, fail bool
	}{
		{"", errors.New("x"), true, false},
		{"0", errors.New("x"), true, false},
		{"yes", errors.New("x"), true, false},
		{"1", errors.New("x"), false, true},
		{"1", nil, false, false},
		{"", nil, false, false},
	} {
		t.Setenv(Tools, tc.value)
		f := &fakeT{}
		Need(f, Tools, tc.missing)
		if f.skipped != tc.skip || f.failed != tc.fail {
			t.Errorf("%s=%q, missing %v: skipped %v failed %v, want %v %v", Tools, tc.value, tc.missing, f.skipped, f.failed, tc.skip, tc.fail)
		}
	}
}
