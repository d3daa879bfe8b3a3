package metrics

import (
	"strings"
	"testing"
)

// TestClip cuts a label value from the network at 64 bytes, on a rune.
func TestClip(t *testing.T) {
	long := strings.Repeat("x", 63) + "é" + strings.Repeat("y", 40)
	if got := clip(long); got != strings.Repeat("x", 63) || clip("sw-core-1") != "sw-core-1" {
		t.Errorf("clip = %q", got)
	}
}
