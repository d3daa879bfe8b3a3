// Package passwd is the control password of a box: made per box (by the
// image builder, ncpos install, or the operator's rotation), kept on
// /perm only as a bcrypt hash, and never gokrazy's or any other box's. A
// card read on another machine gives away no password, and a hash of a
// random password is not worth cracking.
package passwd

import (
	"crypto/rand"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// File is where the hash lives, relative to /perm.
const File = "ncpos/control-password"

// Cost is bcrypt's work factor: 63 ms a check on one core of our 2-core
// build host (slower on an Atom); statusd checks a good password once,
// not per request, and wrong ones one at a time per client.
const Cost = 10

// MinLength and MaxLength bound a password a person chooses (bcrypt reads
// at most 72 bytes; more would be silently ignored).
const (
	minLength = 12
	maxLength = 72
)

// WeakError is a password Strength refuses.
type WeakError struct{ Why string }

func (e *WeakError) Error() string { return e.Why }

// Strength says what is wrong with a chosen password, or nil.
func Strength(pw string) error {
	weak := func(format string, args ...any) error { return &WeakError{fmt.Sprintf(format, args...)} }
	switch {
	case !utf8.ValidString(pw):
		return weak("the password is not valid UTF-8")
	case len(pw) > maxLength:
		return weak("the password has %d bytes, want at most %d", len(pw), maxLength)
	case utf8.RuneCountInString(pw) < minLength:
		return weak("the password has %d characters, want at least %d", utf8.RuneCountInString(pw), minLength)
	case repeats(pw):
		return weak("the password repeats one character")
	case strings.ContainsAny(pw, "\x00\r\n"):
		return weak("the password contains a NUL or line break")
	}
	return nil
}

func repeats(pw string) bool {
	r, _ := utf8.DecodeRuneInString(pw)
	return strings.Count(pw, string(r)) == utf8.RuneCountInString(pw)
}

// Hash returns the bcrypt hash of pw, after checking its strength.
func Hash(pw string) ([]byte, error) {
	if err := Strength(pw); err != nil {
		return nil, err
	}
	return bcrypt.GenerateFromPassword([]byte(pw), Cost)
}

// CheckHash says whether h is a bcrypt hash this package can check, of at
// least the cost ncpos hashes with: a cheaper hash ($2a$04$) that leaks
// from a configuration file is guessed a hundred times faster.
func CheckHash(h []byte) error {
	cost, err := bcrypt.Cost(h)
	if err != nil {
		return fmt.Errorf("not a bcrypt hash ($2a$/$2b$…): %w", err)
	}
	if cost < Cost {
		return fmt.Errorf("a bcrypt hash of cost %d, want at least %d, the cost ncpos hashes with", cost, Cost)
	}
	return nil
}

// Matches says whether pw is the password of hash h.
func Matches(h []byte, pw string) bool {
	return bcrypt.CompareHashAndPassword(h, []byte(pw)) == nil
}

// alphabet leaves out letters people confuse when they copy a password
// from a screen (0/O, 1/l/I).
const alphabet = "23456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"

// Random makes a password of 20 characters from alphabet: 116 bits.
func Random() (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() < 20 {
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		// Rejection keeps every character equally likely.
		if int(buf[0]) < 256-256%len(alphabet) {
			b.WriteByte(alphabet[int(buf[0])%len(alphabet)])
		}
	}
	return b.String(), nil
}
