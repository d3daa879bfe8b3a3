package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/image"
)

// newPin is how host commands trust a box: the -fingerprint given, else
// the key pinned in the known file, else the key it presents on first
// contact, which is then pinned.
func newPin(box, fingerprint, knownFile string) (*boxtls.Pin, error) {
	if fingerprint != "" {
		if _, err := boxtls.ParseFingerprint(fingerprint); err != nil {
			return nil, err
		}
	}
	known := &boxtls.Known{Path: knownFile}
	if knownFile == "" {
		k, err := boxtls.DefaultKnown()
		if err != nil {
			return nil, err
		}
		known = k
	}
	return &boxtls.Pin{Box: box, Known: known, Given: fingerprint, Logf: log.Printf}, nil
}

// boxPassword is the control password of the box named host: from the
// file given, else from the host's record for that name.
func boxPassword(host, file string) (pw, path string, err error) {
	if file == "" {
		dir, err := image.PasswordDir()
		if err != nil {
			return "", "", err
		}
		file = filepath.Join(dir, host)
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("no control password recorded for %s (%s): give the box's password with -password-file, e.g. the file ncpos build printed for its image, or copy that file to %s", host, file, file)
		}
	}
	pw, err = image.ReadPassword(file)
	return pw, file, err
}
