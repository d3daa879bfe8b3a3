package update

import (
	"slices"
	"testing"

	"github.com/ncpos/ncpos/bootpart"
)

// TestLoaderDifferences: only loaders and entries count; the kernels, the
// default-slot files and the manifest are the update's own business, and
// the build's hashes are left as they were.
func TestLoaderDifferences(t *testing.T) {
	want := map[string]string{
		bootpart.SlotA.Kernel():      "new kernel",
		bootpart.SlotB.Kernel():      "new kernel",
		bootpart.SyslinuxDefaultFile: "slot b",
		bootpart.LoaderConfFile:      "slot b",
		bootpart.ManifestFile:        "new manifest",
		"syslinux.cfg":               "same",
		"ldlinux.c32":                "new loader",
		"loader/entries/a.conf":      "entry",
	}
	box := map[string]string{
		bootpart.SlotA.Kernel():      "old kernel",
		bootpart.SyslinuxDefaultFile: "slot a",
		"syslinux.cfg":               "same",
		"ldlinux.c32":                "old loader",
	}
	got := loaderDifferences(want, box)
	if w := []string{"ldlinux.c32", "loader/entries/a.conf (missing)"}; !slices.Equal(got, w) {
		t.Errorf("loaderDifferences = %q, want %q", got, w)
	}
	if len(want) != 8 {
		t.Errorf("loaderDifferences changed the build's hashes: %d left of 8", len(want))
	}
}
