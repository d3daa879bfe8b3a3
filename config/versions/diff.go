package versions

import (
	"fmt"

	"github.com/aymanbagabas/go-udiff"
)

// Diff is the unified diff from one configuration text to another, the
// history's view of a change; "" when they are the same. The labels name
// the two sides (Label for a version).
func Diff(oldLabel string, old []byte, newLabel string, new []byte) string {
	return udiff.Unified(oldLabel, newLabel, string(old), string(new))
}

// Label names version n in a diff.
func Label(n int) string { return fmt.Sprintf("version %d", n) }
