package versions

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, keep int) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "versions"), keep)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAddGetSettle(t *testing.T) {
	s := open(t, DefaultKeep)
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List of a store never written: %v, %v", list, err)
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("opening the store wrote its folder: %v", err)
	}
	v1, err := s.Add([]byte("hostname = \"a\"\n"), Version{By: "boot", Source: "built-in default", State: Confirmed})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute).UTC()
	v2, err := s.Add([]byte("hostname = \"b\"\n"), Version{Parent: v1.Number, By: "admin", From: "192.0.2.9", Comment: "rename", State: Pending, Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Number != 1 || v2.Number != 2 || v2.SHA256 != Sum([]byte("hostname = \"b\"\n")) || v2.Time.IsZero() {
		t.Errorf("versions %+v, %+v", v1, v2)
	}
	got, text, err := s.Get(2)
	if err != nil || string(text) != "hostname = \"b\"\n" || got.Comment != "rename" || !got.Deadline.Equal(deadline) || got.State != Pending {
		t.Errorf("Get(2) = %+v, %q, %v", got, text, err)
	}
	if _, _, err := s.Get(3); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Get(3): %v, want not exist", err)
	}
	settled, err := s.Settle(2, Reverted, "the deadline passed")
	if err != nil || settled.State != Reverted || settled.Reason != "the deadline passed" || !settled.Deadline.IsZero() || settled.Done.IsZero() {
		t.Errorf("Settle = %+v, %v", settled, err)
	}
	if _, err := s.Settle(2, Confirmed, ""); err == nil || !strings.Contains(err.Error(), "version 2 is reverted, and cannot be settled as confirmed") {
		t.Errorf("settling twice: %v", err)
	}
	if _, err := s.Settle(1, Pending, ""); err == nil {
		t.Error("settling as pending was taken")
	}
	// A revert the box owes: reverting, not done, until it is taken;
	// then reverted. Neither is the version in force of its text.
	v3, err := s.Add([]byte("hostname = \"c\"\n"), Version{State: Pending, Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := s.Redeadline(3, deadline.Add(-time.Hour)); err != nil || !moved.Deadline.Equal(deadline.Add(-time.Hour)) {
		t.Errorf("Redeadline = %+v, %v", moved, err)
	}
	owed, err := s.Settle(3, Reverting, "forwarderd: device busy")
	if err != nil || owed.State != Reverting || !owed.Done.IsZero() || !owed.State.Undone() {
		t.Errorf("Settle(Reverting) = %+v, %v", owed, err)
	}
	if _, err := s.Redeadline(3, deadline); err == nil {
		t.Error("a deadline moved on a version that is not pending")
	}
	if _, err := s.Settle(3, Confirmed, ""); err == nil {
		t.Error("a version being reverted was confirmed")
	}
	if in, _ := s.VersionOf([]byte("hostname = \"c\"\n")); in.Number != 0 {
		t.Errorf("a version being reverted is the version in force of its text: %+v", in)
	}
	if done, err := s.Settle(3, Reverted, "taken on the second attempt"); err != nil || done.State != Reverted || done.Done.IsZero() {
		t.Errorf("Settle(Reverted) after Reverting = %+v, %v", done, err)
	}
	if v3.Number != 3 {
		t.Errorf("version %d, want 3", v3.Number)
	}
	list, err := s.List()
	if err != nil || len(list) != 3 || list[1].Number != 2 || list[1].State != Reverted || list[2].Number != 1 {
		t.Errorf("List = %+v, %v", list, err)
	}
}

// TestKeep: the newest versions are kept, and the newest confirmed one
// however old.
func TestKeep(t *testing.T) {
	s := open(t, 3)
	if _, err := s.Add([]byte("a"), Version{State: Confirmed}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Add([]byte{byte('b' + i)}, Version{State: Reverted}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, v := range list {
		nums = append(nums, v.Number)
	}
	if want := []int{6, 5, 4, 1}; !slices.Equal(nums, want) {
		t.Errorf("kept %v, want %v", nums, want)
	}
	entries, _ := os.ReadDir(s.dir)
	if len(entries) != 8 {
		t.Errorf("%d files left, want 8 (4 versions)", len(entries))
	}
}

// TestTornWrite: a text without its record (a power cut between the two
// writes) is no version, and goes when the store next writes; a text
// that does not match its record is refused.
func TestTornWrite(t *testing.T) {
	s := open(t, DefaultKeep)
	if _, err := s.Add([]byte("a"), Version{State: Confirmed}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(2, "toml"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List with a stray text: %+v, %v", list, err)
	}
	v, err := s.Add([]byte("b"), Version{State: Confirmed})
	if err != nil || v.Number != 2 {
		t.Fatalf("Add after a stray text: %+v, %v", v, err)
	}
	if _, text, err := s.Get(2); err != nil || string(text) != "b" {
		t.Errorf("Get(2) = %q, %v", text, err)
	}
	if err := os.WriteFile(s.path(2, "toml"), []byte("c"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(2); err == nil || !strings.Contains(err.Error(), "does not match its record") {
		t.Errorf("Get of an altered text: %v", err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "00000009.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "record of version 9") {
		t.Errorf("List with a broken record: %v", err)
	}
	// A damaged record does not block the next version, which comes after
	// it; a temporary file a power cut left goes.
	tmp := filepath.Join(s.dir, ".00000010.toml123")
	if err := os.WriteFile(tmp, []byte("part"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err = s.Add([]byte("d"), Version{State: Confirmed})
	if err != nil || v.Number != 10 {
		t.Fatalf("Add after a damaged record: %+v, %v", v, err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
	list, err = s.List()
	if err == nil || len(list) != 3 || list[0].Number != 10 {
		t.Errorf("List = %+v, %v; want versions 10, 2, 1 and the damaged record named", list, err)
	}
}

func TestDiff(t *testing.T) {
	d := Diff(Label(1), []byte("hostname = \"a\"\nplatform = \"qemu\"\n"), Label(2), []byte("hostname = \"b\"\nplatform = \"qemu\"\n"))
	for _, want := range []string{"--- version 1", "+++ version 2", "-hostname = \"a\"", "+hostname = \"b\"", " platform = \"qemu\""} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if d := Diff("in force", []byte("a\n"), "candidate", []byte("a\n")); d != "" {
		t.Errorf("diff of the same text: %q", d)
	}
}

func TestOpen(t *testing.T) {
	if _, err := Open(t.TempDir(), 1); err == nil {
		t.Error("keeping one version was taken")
	}
}
