package appliance

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/ncpos/ncpos/config"
)

// LoadConfig returns the configuration that takes effect: override when it
// exists and is valid, else base, else the built-in default. An invalid file
// never takes effect; its error is returned in rejected so that it can be
// shown and logged. source names the file that took effect.
func LoadConfig(base, override string) (cfg *config.Config, source string, rejected []error) {
	for _, path := range []string{override, base} {
		if path == "" {
			continue
		}
		c, err := config.Load(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			rejected = append(rejected, fmt.Errorf("%s rejected, keeping the previous configuration: %w", path, err))
			continue
		}
		return c, path, rejected
	}
	return config.Default(), "built-in default", rejected
}
