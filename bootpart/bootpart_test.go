package bootpart

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHashTreeAndDifferences(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"vmlinuz":                     "kernel",
		"EFI/BOOT/BOOTX64.EFI":        "loader",
		"loader/entries/gokrazy.conf": "entry",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := HashTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["efi/boot/bootx64.efi"] == "" || got["vmlinuz"] == got["efi/boot/bootx64.efi"] {
		t.Fatalf("HashTree = %v", got)
	}
	if d := Differences(got, got); len(d) != 0 {
		t.Errorf("a tree against itself differs in %v", d)
	}
	want := map[string]string{"vmlinuz": got["vmlinuz"], "efi/boot/bootx64.efi": "other", "syslinux.cfg": "x"}
	// Files only the box has (an image's manifest) are no difference.
	if d := Differences(want, got); !slices.Equal(d, []string{"efi/boot/bootx64.efi", "syslinux.cfg (missing)"}) {
		t.Errorf("Differences = %v", d)
	}
}
