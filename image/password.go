package image

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnsurePassword returns gokrazy's HTTP password from path, creating the
// file with a random password when it does not exist (as gokrazy's packer
// does), so that every image built on this host shares it and `ncpos
// update` can find it. path "" means ~/.config/ncpos/http-password.txt.
func EnsurePassword(path string) (pw, file string, err error) {
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", "", err
		}
		path = filepath.Join(dir, "ncpos", "http-password.txt")
	}
	if b, err := os.ReadFile(path); err == nil {
		pw := strings.TrimSpace(string(b))
		if pw == "" {
			return "", "", fmt.Errorf("%s is empty", path)
		}
		return pw, path, nil
	} else if !os.IsNotExist(err) {
		return "", "", err
	}
	buf := make([]byte, 16)
	if _, err := rand.Read(buf); err != nil {
		return "", "", err
	}
	pw = hex.EncodeToString(buf)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return pw, path, nil
}
