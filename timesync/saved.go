package timesync

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ncpos/ncpos/internal/durable"
)

// SaveFile is where the box keeps its last good time.
const SaveFile = "/perm/ncpos/time"

// Save keeps t in path, durably.
func Save(path string, t time.Time) error {
	b, _ := t.UTC().MarshalText()
	if err := durable.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Restore steps clk forward to the time kept in path when clk is behind
// it: a box whose board lost its time starts no earlier than its last
// run. It returns the step (0: none), and no error when nothing was kept.
func Restore(path string, clk Clock) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var saved time.Time
	if err := saved.UnmarshalText(bytes.TrimSpace(b)); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	d := saved.Sub(clk.Now())
	if d <= 0 {
		return 0, nil
	}
	if err := clk.Step(d); err != nil {
		return 0, err
	}
	return d, nil
}
