package install

import "fmt"

// human formats a byte count in decimal units, the way cards and sticks are
// sold ("512 MB", "4.0 GB"), so the prompt matches the label on the card.
func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%d MB", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%d kB", n/1e3)
	}
	return fmt.Sprintf("%d bytes", n)
}

// mib formats a byte count in whole MiB, for progress and error messages.
func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
