package accounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	boxPassword = "the-box-control-password"
	alicePW     = "alice-long-password"
)

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ncpos", "accounts.json")
	s, err := Load(file, Options{Builtin: func(pw string) bool { return pw == boxPassword }})
	if err != nil {
		t.Fatal(err)
	}
	return s, file
}

// A box without an accounts file (one that upgrades) has one admin,
// ncpos, with the box's control password.
func TestUpgradeKeepsTheBoxPassword(t *testing.T) {
	s, file := newStore(t)
	id, err := s.CheckPassword(Builtin, boxPassword)
	if err != nil || id.Role != Admin || id.Name != Builtin || id.Method != "password" {
		t.Fatalf("ncpos with the box's password: %+v, %v", id, err)
	}
	if _, err := s.CheckPassword(Builtin, "wrong-password-here"); !errors.Is(err, ErrLogin) {
		t.Fatalf("ncpos with a wrong password: %v", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("loading wrote the accounts file: %v", err)
	}
	if got := s.Accounts(); len(got) != 1 || got[0].Password != "box" || got[0].Role != Admin {
		t.Fatalf("accounts of an upgraded box: %+v", got)
	}
}

func TestAtLeastOneAdminRemains(t *testing.T) {
	s, _ := newStore(t)
	for what, err := range map[string]error{
		"removing ncpos":   s.Remove(Builtin),
		"disabling ncpos":  s.SetDisabled(Builtin, true),
		"demoting ncpos":   s.SetRole(Builtin, Operator),
		"a role of none":   s.SetRole(Builtin, None),
		"an unknown admin": s.Remove("bob"),
	} {
		if err == nil {
			t.Errorf("%s: allowed", what)
		}
	}
	if err := s.Remove(Builtin); !errors.Is(err, ErrLastAdmin) {
		t.Errorf("removing the last admin: %v, want ErrLastAdmin", err)
	}
	if err := s.Add("alice", Admin, alicePW); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(Builtin); err != nil {
		t.Fatalf("removing ncpos with alice an admin: %v", err)
	}
	if err := s.SetRole("alice", Viewer); !errors.Is(err, ErrLastAdmin) {
		t.Errorf("demoting the last admin: %v", err)
	}
	if err := s.SetDisabled("alice", true); !errors.Is(err, ErrLastAdmin) {
		t.Errorf("disabling the last admin: %v", err)
	}
	if _, err := s.CheckPassword(Builtin, boxPassword); !errors.Is(err, ErrLogin) {
		t.Errorf("removed ncpos still signs in: %v", err)
	}
}

func TestAccountsAreKept(t *testing.T) {
	s, file := newStore(t)
	if err := s.Add("alice", Operator, alicePW); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pw string
		role     Role
	}{
		{"Alice", alicePW, Viewer}, {"al ice", alicePW, Viewer}, {"", alicePW, Viewer},
		{strings.Repeat("a", 33), alicePW, Viewer}, {"bob", "short", Viewer}, {"bob", alicePW, None},
	} {
		if err := s.Add(tc.name, tc.role, tc.pw); !errors.Is(err, ErrInvalid) {
			t.Errorf("Add(%q, %v, %q): %v, want ErrInvalid", tc.name, tc.role, tc.pw, err)
		}
	}
	if err := s.Add("alice", Viewer, alicePW); !errors.Is(err, ErrExists) {
		t.Errorf("adding alice twice: %v", err)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("accounts file: %v, %v", st, err)
	}
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), alicePW) {
		t.Fatal("the file holds a password")
	}
	r, err := Load(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CheckPassword("alice", alicePW)
	if err != nil || id.Role != Operator {
		t.Fatalf("alice after a reload: %+v, %v", id, err)
	}
	if err := r.SetPassword("alice", "another-long-one"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CheckPassword("alice", alicePW); !errors.Is(err, ErrLogin) {
		t.Errorf("the old password still works: %v", err)
	}
	if err := r.SetDisabled("alice", true); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CheckPassword("alice", "another-long-one"); !errors.Is(err, ErrLogin) {
		t.Errorf("a disabled account signs in: %v", err)
	}
	if _, err := r.CheckPassword("nobody", alicePW); !errors.Is(err, ErrLogin) {
		t.Errorf("an unknown account: %v", err)
	}
}

// A change that cannot be written changes nothing.
func TestUnwrittenChangeChangesNothing(t *testing.T) {
	s, err := Load("/proc/ncpos-no-such-dir/accounts.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add("alice", Admin, alicePW); !errors.Is(err, ErrNotKept) {
		t.Fatalf("Add on an unwritable /perm: %v", err)
	}
	if got := s.Accounts(); len(got) != 1 {
		t.Fatalf("an unkept Add took effect: %+v", got)
	}
}

// A file that does not read is neither used nor overwritten.
func TestBrokenFileIsKept(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"not json":   "{",
		"no admin":   `{"accounts":[{"name":"v","role":"viewer","hash":"` + mustHash(t) + `"}]}`,
		"bad role":   `{"accounts":[{"name":"ncpos","role":"root"}]}`,
		"weak hash":  `{"accounts":[{"name":"ncpos","role":"admin"},{"name":"a","role":"admin","hash":"x"}]}`,
		"twice":      `{"accounts":[{"name":"ncpos","role":"admin"},{"name":"ncpos","role":"admin"}]}`,
		"orphan tok": `{"accounts":[{"name":"ncpos","role":"admin"}],"tokens":[{"name":"t","account":"x","role":"viewer","hash":"00"}]}`,
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(file, []byte(content), 0o600)
		s, err := Load(file, Options{Builtin: func(pw string) bool { return pw == boxPassword }})
		if err == nil {
			t.Errorf("%s: loaded", name)
			continue
		}
		if _, err := s.CheckPassword(Builtin, boxPassword); err != nil {
			t.Errorf("%s: ncpos cannot sign in to repair it: %v", name, err)
		}
		if err := s.Add("alice", Admin, alicePW); !errors.Is(err, ErrNotKept) {
			t.Errorf("%s: a change was taken: %v", name, err)
		}
		if b, _ := os.ReadFile(file); string(b) != content {
			t.Errorf("%s: the file was overwritten", name)
		}
	}
}

func mustHash(t *testing.T) string {
	h, err := hashPassword(alicePW)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestTokens(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "accounts.json")
	s, _ := Load(file, Options{Now: func() time.Time { return now }})
	if err := s.Add("alice", Operator, alicePW); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateToken("alice", "too-high", Admin, time.Hour); !errors.Is(err, ErrInvalid) {
		t.Errorf("an admin token for an operator: %v", err)
	}
	if _, _, err := s.CreateToken("bob", "t", Viewer, time.Hour); !errors.Is(err, ErrNotFound) {
		t.Errorf("a token for nobody: %v", err)
	}
	for _, life := range []time.Duration{0, time.Second, MaxTokenLife + time.Hour} {
		if _, _, err := s.CreateToken("alice", "t", Viewer, life); !errors.Is(err, ErrInvalid) {
			t.Errorf("a token living %v: %v", life, err)
		}
	}
	scrape, tok, err := s.CreateToken("alice", "prometheus", Viewer, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	op, _, err := s.CreateToken("alice", "ansible", Operator, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateToken("alice", "ansible", Viewer, time.Hour); !errors.Is(err, ErrExists) {
		t.Errorf("a second token named ansible: %v", err)
	}
	if !strings.HasPrefix(scrape, TokenPrefix) || tok.Hash != "" || !tok.Expires.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("token %q: %+v", scrape, tok)
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), scrape) {
		t.Fatal("the file holds a token's secret")
	}
	id, err := s.CheckToken(scrape)
	if err != nil || id.Role != Viewer || id.Name != "alice/prometheus" || id.Method != "token" {
		t.Fatalf("the scrape token: %+v, %v", id, err)
	}
	if got := s.Tokens(); len(got) != 2 || !got[0].LastUsed.Equal(now) || got[0].Hash != "" {
		t.Fatalf("tokens listed: %+v", got)
	}
	for _, bad := range []string{"", "ncpos_", scrape + "x", strings.TrimPrefix(scrape, TokenPrefix)} {
		if _, err := s.CheckToken(bad); !errors.Is(err, ErrLogin) {
			t.Errorf("secret %q: %v", bad, err)
		}
	}
	// A token never acts above its account.
	if err := s.SetRole("alice", Viewer); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.CheckToken(op); id.Role != Viewer {
		t.Errorf("the operator token of a demoted account acts as %v", id.Role)
	}
	if err := s.SetDisabled("alice", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckToken(op); !errors.Is(err, ErrLogin) {
		t.Errorf("a disabled account's token: %v", err)
	}
	s.SetDisabled("alice", false)
	now = now.Add(24 * time.Hour)
	if _, err := s.CheckToken(scrape); !errors.Is(err, ErrLogin) {
		t.Errorf("an expired token: %v", err)
	}
	if _, err := s.Revoke("ansible"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckToken(op); !errors.Is(err, ErrLogin) {
		t.Errorf("a revoked token: %v", err)
	}
	if _, err := s.Revoke("ansible"); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoking twice: %v", err)
	}
	// Removing the account removes its tokens, and they stay removed.
	if err := s.Remove("alice"); err != nil {
		t.Fatal(err)
	}
	r, err := Load(file, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Tokens(); len(got) != 0 {
		t.Errorf("tokens of a removed account: %+v", got)
	}
}

func TestRoles(t *testing.T) {
	if !Admin.Allows(Operator) || !Operator.Allows(Viewer) || Viewer.Allows(Operator) || None.Allows(None) || Operator.Allows(Admin) {
		t.Fatal("role order wrong")
	}
	for _, r := range []Role{Viewer, Operator, Admin} {
		p, err := ParseRole(r.String())
		if err != nil || p != r {
			t.Errorf("ParseRole(%q) = %v, %v", r, p, err)
		}
	}
	if _, err := ParseRole("none"); err == nil {
		t.Error("none parsed as a role")
	}
}
