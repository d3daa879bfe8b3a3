package snmpview

import (
	"strings"
	"testing"
)

// TestLimit255 cuts a DisplayString at 255 bytes, on a rune.
func TestLimit255(t *testing.T) {
	if got := limit255(strings.Repeat("é", 200)); len(got) > 255 || !strings.HasPrefix(strings.Repeat("é", 200), got) {
		t.Errorf("limit255 cut to %d bytes", len(got))
	}
}
