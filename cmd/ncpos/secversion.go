package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/internal/durable"
)

// securityVersionFile is where the build host remembers the highest
// security version it has built with (~/.config/ncpos/security-version).
func securityVersionFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ncpos", "security-version"), nil
}

// securityVersion decides a build's security version: asked nil means
// not given, and takes the highest this host has used; one below it is
// refused, since boxes that made such a build permanent would refuse the
// new one; a higher one becomes the host's new highest.
func securityVersion(path string, asked *uint64) (uint32, error) {
	highest := uint64(0)
	switch b, err := os.ReadFile(path); {
	case err == nil:
		if highest, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32); err != nil {
			return 0, fmt.Errorf("%s: not a security version: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	if asked == nil {
		return uint32(highest), nil
	}
	if *asked > 1<<32-1 {
		return 0, fmt.Errorf("-security-version %d: want 0 to %d", *asked, uint32(1<<32-1))
	}
	if *asked < highest {
		return 0, fmt.Errorf("-security-version %d is below %d, the highest this host has built with (%s): a box that made such a build permanent refuses lower ones", *asked, highest, path)
	}
	if *asked > highest {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return 0, err
		}
		if err := durable.WriteFile(path, []byte(strconv.FormatUint(*asked, 10)+"\n"), 0o600); err != nil {
			return 0, fmt.Errorf("remembering the security version: %w", err)
		}
	}
	return uint32(*asked), nil
}
