package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ncpos/ncpos/passwd"
)

// PasswordDir is where the host keeps the control passwords it made, one
// file per image (named by build ID) or per box (named as -host names
// it), mode 0600: ~/.config/ncpos/passwords.
func PasswordDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ncpos", "passwords"), nil
}

// NewControlPassword makes a random control password for one image and
// records it on the host as dir/name (dir "" = PasswordDir). Every image
// gets its own: no two boxes share a password unless one card is copied.
// An existing record is never overwritten.
func NewControlPassword(dir, name string) (pw, file string, err error) {
	if dir == "" {
		if dir, err = PasswordDir(); err != nil {
			return "", "", err
		}
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", "", fmt.Errorf("password record name %q: want a build ID or box name", name)
	}
	if pw, err = passwd.Random(); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	file = filepath.Join(dir, name)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return "", "", fmt.Errorf("%s exists already: a password is recorded for %s", file, name)
	}
	if err != nil {
		return "", "", err
	}
	// On the disk before the password goes anywhere: a host that loses
	// power right after must still have it.
	_, err = f.WriteString(pw + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(file)
		return "", "", err
	}
	return pw, file, nil
}

// ReadPassword reads a password file's first line.
func ReadPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	if pw = strings.TrimRight(pw, "\r"); pw == "" {
		return "", fmt.Errorf("%s holds no password on its first line", path)
	}
	return pw, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
