package boxtls

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ncpos/ncpos/internal/durable"
)

// Known is the host's list of pinned boxes, one "name fingerprint" line
// per box, like ssh's known_hosts: ~/.config/ncpos/known_boxes.
type Known struct {
	Path string
	mu   sync.Mutex
}

// DefaultKnown is the list in the user's configuration directory.
func DefaultKnown() (*Known, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, err
	}
	return &Known{Path: filepath.Join(dir, "ncpos", "known_boxes")}, nil
}

// Get returns the fingerprint pinned for box.
func (k *Known) Get(box string) (string, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m, _, err := k.read()
	if err != nil {
		return "", false, err
	}
	fp, ok := m[box]
	return fp, ok, nil
}

// Set pins fp for box, replacing what was pinned; the file is rewritten
// in one rename, so a crash leaves it whole.
func (k *Known) Set(box, fp string) error {
	if box == "" || strings.ContainsAny(box, " \t\n") {
		return fmt.Errorf("box name %q: want a name or address without spaces", box)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	m, order, err := k.read()
	if err != nil {
		return err
	}
	if _, ok := m[box]; !ok {
		order = append(order, box)
	}
	m[box] = fp
	var b bytes.Buffer
	b.WriteString("# ncpos: boxes this host has pinned (name fingerprint); ncpos commands add them on first contact\n")
	for _, name := range order {
		fmt.Fprintf(&b, "%s %s\n", name, m[name])
	}
	if err := os.MkdirAll(filepath.Dir(k.Path), 0o700); err != nil {
		return err
	}
	if err := durable.WriteFile(k.Path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("pinning %s: %w", box, err)
	}
	return nil
}

func (k *Known) read() (map[string]string, []string, error) {
	m := map[string]string{}
	var order []string
	data, err := os.ReadFile(k.Path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, nil, fmt.Errorf("%s:%d: want \"name fingerprint\", got %q", k.Path, n, line)
		}
		fp, err := ParseFingerprint(f[1])
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", k.Path, n, err)
		}
		if _, dup := m[f[0]]; !dup {
			order = append(order, f[0])
		}
		m[f[0]] = fp
	}
	return m, order, nil
}
