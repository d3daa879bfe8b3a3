package versions

import (
	"fmt"

	"github.com/aymanbagabas/go-udiff"
)

// Diff is the unified diff from one configuration text to another, the
// history's view of a change; "" when they are the same. Versions are
// named by number, 0 for a text that is not (yet) a version.
func Diff(from int, old []byte, to int, new []byte) string {
	return udiff.Unified(label(from), label(to), string(old), string(new))
}

func label(n int) string {
	if n == 0 {
		return "candidate"
	}
	return fmt.Sprintf("version %d", n)
}
