package accounts

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Token is an API token: a secret automation sends as
// "Authorization: Bearer …", acting for its account with a role no
// higher than the account's. Only the secret's SHA-256 is kept: the
// secret is 256 random bits, so the hash needs no slow function, and a
// copy of /perm gives no token away.
type Token struct {
	Name     string    `json:"name"`
	Account  string    `json:"account"`
	Role     Role      `json:"role"`
	Hash     string    `json:"hash,omitempty"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	LastUsed time.Time `json:"last_used,omitzero"`
}

// TokenPrefix starts every token's secret, so that a secret scanner (or
// a person) recognizes one in a file or a log.
const TokenPrefix = "ncpos_"

// MinTokenLife and MaxTokenLife bound a token's life: every token
// expires, and the longest lives through one replacement of a scrape
// server's configuration a year.
const (
	MinTokenLife = time.Minute
	MaxTokenLife = 2 * 366 * 24 * time.Hour
)

// usedEvery is how often a token's last use is written to /perm: a
// scrape every 15 s would otherwise write the card 5760 times a day.
const usedEvery = time.Hour

// CreateToken makes a token for account and returns its secret, which is
// shown once and kept nowhere.
func (s *Store) CreateToken(account, name string, role Role, life time.Duration) (string, Token, error) {
	if err := CheckName(name); err != nil {
		return "", Token{}, err
	}
	if life < MinTokenLife || life > MaxTokenLife {
		return "", Token{}, fmt.Errorf("%w expiry: %v, want from %v to %v", ErrInvalid, life, MinTokenLife, MaxTokenLife)
	}
	if role == None {
		return "", Token{}, fmt.Errorf("%w role: a token needs one (viewer, operator or admin)", ErrInvalid)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	now := s.now().UTC()
	t := Token{Name: name, Account: account, Role: role, Hash: hashToken(secret), Created: now, Expires: now.Add(life)}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.change(func(st *state) error {
		i := st.account(account)
		if i < 0 {
			return fmt.Errorf("account %q: %w", account, ErrNotFound)
		}
		if a := st.Accounts[i]; !a.Role.Allows(role) {
			return fmt.Errorf("%w role: a token of %s (%s) may be at most %s", ErrInvalid, account, a.Role.Article(), a.Role)
		}
		if slices.ContainsFunc(st.Tokens, func(o Token) bool { return o.Name == name }) {
			return fmt.Errorf("token %q %w", name, ErrExists)
		}
		st.Tokens = append(st.Tokens, t)
		return nil
	})
	if err != nil {
		return "", Token{}, err
	}
	t.Hash = ""
	return secret, t, nil
}

func hashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Tokens lists the tokens, without their hashes, with when each was last
// used.
func (s *Store) Tokens() []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.st.Tokens)
	for i := range out {
		out[i].Hash = ""
		if u := s.used[out[i].Name]; u.After(out[i].LastUsed) {
			out[i].LastUsed = u
		}
	}
	return out
}

// Revoke deletes a token, which stops working at once, and returns it
// (without its hash).
func (s *Store) Revoke(name string) (Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone Token
	err := s.change(func(st *state) error {
		i := slices.IndexFunc(st.Tokens, func(t Token) bool { return t.Name == name })
		if i < 0 {
			return fmt.Errorf("token %q: %w", name, ErrNotFound)
		}
		gone = st.Tokens[i]
		st.Tokens = slices.Delete(st.Tokens, i, i+1)
		return nil
	})
	gone.Hash = ""
	return gone, err
}

// CheckToken signs in with a token's secret: it must be known, not
// expired, and its account enabled. It acts with the lower of its role
// and its account's. Every refusal is ErrLogin.
func (s *Store) CheckToken(secret string) (Identity, error) {
	if !strings.HasPrefix(secret, TokenPrefix) {
		return Identity{}, ErrLogin
	}
	h := hashToken(secret)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	found := -1
	for i, t := range s.st.Tokens {
		if subtle.ConstantTimeCompare([]byte(t.Hash), []byte(h)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Identity{}, ErrLogin
	}
	t := s.st.Tokens[found]
	a := s.st.Accounts[s.st.account(t.Account)]
	if !now.Before(t.Expires) || a.Disabled {
		return Identity{}, ErrLogin
	}
	s.used[t.Name] = now.UTC()
	if now.Sub(t.LastUsed) >= usedEvery {
		// Best effort: a card that cannot be written still lets the
		// token in; the use is written with the next change.
		_ = s.change(func(*state) error { return nil })
	}
	return Identity{Name: t.Account + "/" + t.Name, Account: t.Account, Role: min(t.Role, a.Role), Method: "token"}, nil
}
