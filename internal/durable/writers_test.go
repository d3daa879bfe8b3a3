package durable

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notDurable are the files that may replace or rename files another way,
// and why.
var notDurable = map[string]string{
	"sysinfo/initrecord.go": "init's record is in /run, a tmpfs that a power cut empties anyway",
}

// Every writer that replaces or renames a file does it through this
// package, so that no acknowledged write to /perm (or to the build host's
// keys and inventories) can be undone by a power cut.
func TestEveryWriterIsDurable(t *testing.T) {
	root := filepath.Join("..", "..")
	bare := regexp.MustCompile(`renameio\.|os\.Rename\(`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") || rel == "internal/durable" || rel == "vm" || rel == "lab" {
				return filepath.SkipDir // tests and labs write scratch files
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || notDurable[rel] != "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if bare.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d: %s: write with durable.WriteFile, durable.Rename or durable.Append", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
