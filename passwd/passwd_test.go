package passwd

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestStrength(t *testing.T) {
	for _, bad := range []struct{ pw, why string }{
		{"short", "at least 12"},
		{"aaaaaaaaaaaaaa", "repeats one character"},
		{strings.Repeat("x1", 40), "at most 72"},
		{"twelve chars\n!", "line break"},
		{"\xff\xfe invalid utf8 here", "UTF-8"},
	} {
		if err := Strength(bad.pw); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("Strength(%q) = %v, want it to say %q", bad.pw, err, bad.why)
		}
	}
	for _, good := range []string{"correct horse battery", "Zürich-Ø-2026!"} {
		if err := Strength(good); err != nil {
			t.Errorf("Strength(%q) = %v", good, err)
		}
	}
}

func TestHashAndRandom(t *testing.T) {
	a, err := Random()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Random()
	if a == b || len(a) != 20 || strings.ContainsAny(a, "0O1lI") {
		t.Fatalf("Random() = %q, %q", a, b)
	}
	h, err := Hash(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHash(h); err != nil {
		t.Fatal(err)
	}
	if !Matches(h, a) || Matches(h, b) || strings.Contains(string(h), a) {
		t.Fatal("hash does not tell the password from another, or holds it")
	}
	if err := CheckHash([]byte("plaintext-password")); err == nil {
		t.Fatal("a plain password passed for a hash")
	}
	if _, err := Hash("short"); err == nil {
		t.Fatal("a weak password was hashed")
	}
}

func TestCheckHashCost(t *testing.T) {
	cheap, err := bcrypt.GenerateFromPassword([]byte("correct horse battery"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHash(cheap); err == nil || !strings.Contains(err.Error(), "cost 4, want at least 10") {
		t.Errorf("a hash of cost 4: %v, want it refused", err)
	}
	ours, err := Hash("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHash(ours); err != nil {
		t.Errorf("ncpos's own hash: %v", err)
	}
	if err := CheckHash([]byte("$1$md5crypt")); err == nil {
		t.Error("an md5-crypt hash taken")
	}
}
