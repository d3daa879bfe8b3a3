package image

import (
	"testing"

	"github.com/ncpos/ncpos/partition"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"512M", 512e6}, {"1G", 1e9}, {"256MiB", 256 << 20}, {"2GB", 2e9}, {"1048576", 1 << 20},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "M", "-5M", "12X", "1.5G"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded", bad)
		}
	}
}

func TestLayoutFitsCompactFlash(t *testing.T) {
	// The smallest 512 MB CF cards in the field report 1,000,944 sectors.
	card := int64(1000944 * 512)
	size, _ := ParseSize("512M")
	l, err := NewLayout(size)
	if err != nil {
		t.Fatal(err)
	}
	end := l.Parts[partition.Perm].Offset + l.Parts[partition.Perm].Size
	if end > card || l.Size > card {
		t.Fatalf("layout ends at %d bytes, beyond a 512 MB card (%d)", end, card)
	}
	for n := partition.Boot; n < partition.Perm; n++ {
		if l.Parts[n].Offset+l.Parts[n].Size != l.Parts[n+1].Offset {
			t.Fatalf("partition %d does not end where %d starts", n, n+1)
		}
		if l.Parts[n].Offset%mib != 0 {
			t.Fatalf("partition %d is not MiB-aligned", n)
		}
	}
	if _, err := NewLayout(300e6); err == nil {
		t.Fatal("a 300 MB disk was accepted")
	}
}
