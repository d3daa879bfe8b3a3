package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// UpdateGolden is the environment variable that has Golden write its
// files anew from what the tests see, for a change that means to change
// them: NCPOS_UPDATE_GOLDEN=1 go test -run TestX ./pkg, then a read of
// the diff.
const UpdateGolden = "NCPOS_UPDATE_GOLDEN"

// Golden compares got with the package's testdata/name, or writes it
// there when UpdateGolden is set.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv(UpdateGolden) != "" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s=1 go test -run %s writes it)", err, UpdateGolden, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from what the test saw (%s=1 writes it anew):\n--- got\n%s--- want\n%s", path, UpdateGolden, got, want)
	}
}
