package accounts

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/web/api"
	"golang.org/x/crypto/bcrypt"
)

// File is where the accounts and tokens are kept, relative to /perm.
const File = "ncpos/accounts.json"

// Builtin is the account every box starts with: an admin whose password
// is the box's control password (the one the image builder or ncpos
// install made, or status.password_hash). A box without an accounts file
// has only it, so a box that upgrades keeps working as before.
const Builtin = api.BuiltinAccount

// Account is one local account.
type Account struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
	// Hash is the password's bcrypt hash; empty for Builtin, whose
	// password is the box's control password.
	Hash     string    `json:"hash,omitempty"`
	Disabled bool      `json:"disabled,omitempty"`
	Created  time.Time `json:"created"`
}

// state is what the file holds.
type state struct {
	Accounts []Account `json:"accounts"`
	Tokens   []Token   `json:"tokens"`
}

func (s state) clone() state {
	return state{Accounts: slices.Clone(s.Accounts), Tokens: slices.Clone(s.Tokens)}
}

func (s state) account(name string) int {
	return slices.IndexFunc(s.Accounts, func(a Account) bool { return a.Name == name })
}

// Errors a change or a login is refused with; the web side answers each
// with its own status.
var (
	ErrNotFound  = errors.New("no such account or token")
	ErrExists    = errors.New("already exists")
	ErrLastAdmin = errors.New("at least one enabled admin must remain")
	ErrInvalid   = errors.New("invalid")
	ErrLogin     = errors.New("wrong user, password or token")
	ErrNotKept   = errors.New("accounts not kept")
)

// Store is the accounts and tokens of one box. Every change is written
// to its file durably before it takes effect: a change that cannot be
// kept changes nothing.
type Store struct {
	file    string
	now     func() time.Time
	builtin func(pw string) bool
	broken  error // why changes are refused: the file did not read

	mu   sync.Mutex
	st   state
	good map[string][sha256.Size]byte // account → SHA-256 of its password that matched
	used map[string]time.Time         // token → last use, not yet written
}

// Options are what a Store needs besides its file.
type Options struct {
	// Builtin checks the password of the Builtin account; nil: nothing
	// signs in as it.
	Builtin func(pw string) bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Load reads the accounts in file ("": none kept, only Builtin). A
// missing file is a box with only
// Builtin. A file that does not read is an error; the Store returned
// with it has only Builtin and refuses changes, so that the file is not
// overwritten before someone has looked at it.
func Load(file string, o Options) (*Store, error) {
	s := &Store{file: file, now: o.Now, builtin: o.Builtin, good: map[string][sha256.Size]byte{}, used: map[string]time.Time{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.builtin == nil {
		s.builtin = func(string) bool { return false }
	}
	def := state{Accounts: []Account{{Name: Builtin, Role: Admin}}}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		s.st = def
		return s, nil
	}
	if err == nil {
		err = s.decode(b)
	}
	if err != nil {
		s.st, s.broken = def, fmt.Errorf("%s: %w", file, err)
		return s, s.broken
	}
	return s, nil
}

func (s *Store) decode(b []byte) error {
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	for i, a := range st.Accounts {
		if err := CheckName(a.Name); err != nil {
			return fmt.Errorf("account %d: %w", i+1, err)
		}
		if st.account(a.Name) != i {
			return fmt.Errorf("account %q listed twice", a.Name)
		}
		if a.Role == None {
			return fmt.Errorf("account %q has no role", a.Name)
		}
		if a.Name != Builtin {
			if err := passwd.CheckHash([]byte(a.Hash)); err != nil {
				return fmt.Errorf("account %q: %w", a.Name, err)
			}
		}
	}
	for i, t := range st.Tokens {
		if err := CheckName(t.Name); err != nil {
			return fmt.Errorf("token %d: %w", i+1, err)
		}
		if st.account(t.Account) < 0 {
			return fmt.Errorf("token %q of unknown account %q", t.Name, t.Account)
		}
		if t.Role == None || len(t.Hash) != 2*sha256.Size {
			return fmt.Errorf("token %q: no role or no hash", t.Name)
		}
	}
	if err := enoughAdmins(st); err != nil {
		return err
	}
	s.st = st
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)

// CheckName says what is wrong with an account's or a token's name: a
// lower-case letter or _ first, then letters, digits, _ . or -, at most
// 32 in all, as a Unix user name.
func CheckName(n string) error {
	if !nameRE.MatchString(n) {
		return fmt.Errorf("%w name %q: want a lower-case letter or _ first, then lower-case letters, digits, _ . or -, 32 at most", ErrInvalid, n)
	}
	return nil
}

func enoughAdmins(st state) error {
	for _, a := range st.Accounts {
		if a.Role == Admin && !a.Disabled {
			return nil
		}
	}
	return ErrLastAdmin
}

// change applies f to a copy of the state, writes it and only then makes
// it the store's.
func (s *Store) change(f func(st *state) error) error {
	if s.broken != nil {
		return fmt.Errorf("%w: the accounts file did not read (%v): repair or remove it first", ErrNotKept, s.broken)
	}
	st := s.st.clone()
	if err := f(&st); err != nil {
		return err
	}
	if err := enoughAdmins(st); err != nil {
		return err
	}
	for i, t := range st.Tokens {
		if u, ok := s.used[t.Name]; ok && u.After(t.LastUsed) {
			st.Tokens[i].LastUsed = u
		}
	}
	if err := s.write(st); err != nil {
		return err
	}
	s.st = st
	return nil
}

func (s *Store) write(st state) error {
	if s.file == "" {
		return fmt.Errorf("%w: this box keeps no accounts besides %s", ErrNotKept, Builtin)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.file), 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrNotKept, err)
	}
	if err := durable.WriteFile(s.file, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("%w: %v", ErrNotKept, err)
	}
	return nil
}

// AccountInfo is an account as the API lists it: never its hash.
type AccountInfo struct {
	Name     string    `json:"name"`
	Role     Role      `json:"role"`
	Disabled bool      `json:"disabled"`
	Created  time.Time `json:"created,omitzero"`
	// Password says where the password is kept: "own" or, for Builtin,
	// "box" (the box's control password).
	Password string `json:"password"`
	Tokens   int    `json:"tokens"`
}

// Accounts lists the accounts.
func (s *Store) Accounts() []AccountInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []AccountInfo
	for _, a := range s.st.Accounts {
		i := AccountInfo{Name: a.Name, Role: a.Role, Disabled: a.Disabled, Created: a.Created, Password: "own"}
		if a.Name == Builtin {
			i.Password = "box"
		}
		for _, t := range s.st.Tokens {
			if t.Account == a.Name {
				i.Tokens++
			}
		}
		out = append(out, i)
	}
	return out
}

// Account returns one account.
func (s *Store) Account(name string) (AccountInfo, error) {
	for _, a := range s.Accounts() {
		if a.Name == name {
			return a, nil
		}
	}
	return AccountInfo{}, fmt.Errorf("account %q: %w", name, ErrNotFound)
}

// Add makes a new account.
func (s *Store) Add(name string, role Role, pw string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if role == None {
		return fmt.Errorf("%w role: an account needs one (viewer, operator or admin)", ErrInvalid)
	}
	h, err := hashPassword(pw)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.change(func(st *state) error {
		if st.account(name) >= 0 {
			return fmt.Errorf("account %q %w", name, ErrExists)
		}
		st.Accounts = append(st.Accounts, Account{Name: name, Role: role, Hash: h, Created: s.now().UTC()})
		return nil
	})
}

func hashPassword(pw string) (string, error) {
	h, err := passwd.Hash(pw)
	var weak *passwd.WeakError
	if errors.As(err, &weak) {
		return "", fmt.Errorf("%w password: %v", ErrInvalid, err)
	}
	return string(h), err
}

// Remove deletes an account and its tokens.
func (s *Store) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.edit(name, func(st *state, i int) {
		st.Accounts = slices.Delete(st.Accounts, i, i+1)
		st.Tokens = slices.DeleteFunc(st.Tokens, func(t Token) bool { return t.Account == name })
	})
}

// SetRole changes an account's role. Its tokens keep theirs, but never
// act above the account's.
func (s *Store) SetRole(name string, role Role) error {
	if role == None {
		return fmt.Errorf("%w role: an account needs one (viewer, operator or admin)", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.edit(name, func(st *state, i int) { st.Accounts[i].Role = role })
}

// SetDisabled disables an account (and so its tokens) or enables it.
func (s *Store) SetDisabled(name string, off bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.edit(name, func(st *state, i int) { st.Accounts[i].Disabled = off })
}

// SetPassword changes an account's password; Builtin's is the box's
// control password, changed where that is kept.
func (s *Store) SetPassword(name, pw string) error {
	if name == Builtin {
		return fmt.Errorf("%w: the password of %s is the box's control password", ErrInvalid, Builtin)
	}
	h, err := hashPassword(pw)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.edit(name, func(st *state, i int) { st.Accounts[i].Hash = h })
}

// edit changes the account name and forgets the password it last
// matched.
func (s *Store) edit(name string, f func(st *state, i int)) error {
	err := s.change(func(st *state) error {
		i := st.account(name)
		if i < 0 {
			return fmt.Errorf("account %q: %w", name, ErrNotFound)
		}
		f(st, i)
		return nil
	})
	if err == nil {
		delete(s.good, name)
	}
	return err
}

// Identity is who a request signed in as.
type Identity struct {
	// Name is the account, or account/token for a token.
	Name    string
	Account string
	Role    Role
	// Method is how: "password" or "token".
	Method string
}

// dummyHash is checked against when the account does not exist, so that
// the time a refusal takes does not say which accounts exist.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("ncpos-no-such-account"), passwd.Cost)

// CheckPassword signs in an account with its password. Every refusal is
// ErrLogin, whatever was wrong.
func (s *Store) CheckPassword(name, pw string) (Identity, error) {
	sum := sha256.Sum256([]byte(pw))
	s.mu.Lock()
	i := s.st.account(name)
	var a Account
	if i >= 0 {
		a = s.st.Accounts[i]
	}
	good, cached := s.good[name]
	s.mu.Unlock()
	id := Identity{Name: name, Account: name, Role: a.Role, Method: "password"}
	switch {
	case i < 0:
		bcrypt.CompareHashAndPassword(dummyHash, []byte(pw))
		return Identity{}, ErrLogin
	case a.Name == Builtin:
		if !s.builtin(pw) || a.Disabled {
			return Identity{}, ErrLogin
		}
		return id, nil
	case cached && subtle.ConstantTimeCompare(good[:], sum[:]) == 1:
	case passwd.Matches([]byte(a.Hash), pw):
		s.mu.Lock()
		if j := s.st.account(name); j >= 0 && s.st.Accounts[j].Hash == a.Hash {
			s.good[name] = sum
		}
		s.mu.Unlock()
	default:
		return Identity{}, ErrLogin
	}
	if a.Disabled {
		return Identity{}, ErrLogin
	}
	return id, nil
}

// SignsIn says whether anything but Builtin's password can sign in: an
// enabled account of its own, or a token. A box whose control password
// is not set up can still be reached through one.
func (s *Store) SignsIn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.st.Tokens) > 0 {
		return true
	}
	for _, a := range s.st.Accounts {
		if a.Name != Builtin && !a.Disabled {
			return true
		}
	}
	return false
}
