package forwarder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/config"
)

func TestParseSegmentFlag(t *testing.T) {
	tests := []struct {
		in      string
		want    Segment
		wantErr string
	}{
		{in: "seg1=eth1,eth2", want: Segment{Name: "seg1", Interfaces: [2]string{"eth1", "eth2"}, Labels: [2]string{"eth1", "eth2"}}},
		{in: " wan-lan=ncpt-x-p0a,ncpt-x-p0b ", want: Segment{Name: "wan-lan", Interfaces: [2]string{"ncpt-x-p0a", "ncpt-x-p0b"}, Labels: [2]string{"ncpt-x-p0a", "ncpt-x-p0b"}}},
		{in: "seg1=eth1,eth1", wantErr: "both ports"},
		{in: "seg1=eth1", wantErr: "want name=ifA,ifB"},
		{in: "Seg1=eth1,eth2", wantErr: "want name=ifA,ifB"},
		{in: "seg1=eth1,eth2,eth3", wantErr: "want name=ifA,ifB"},
		{in: "seg1=averyveryverylongname,eth2", wantErr: "want name=ifA,ifB"},
	}
	for _, tt := range tests {
		got, err := ParseSegmentFlag(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSegmentFlag(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSegmentFlag(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckSegments(t *testing.T) {
	seg := func(name, a, b string) Segment { return Segment{Name: name, Interfaces: [2]string{a, b}} }
	tests := []struct {
		segs    []Segment
		wantErr string
	}{
		{[]Segment{seg("a", "eth1", "eth2"), seg("b", "eth3", "eth4")}, ""},
		{nil, "no segments"},
		{[]Segment{seg("a", "eth1", "eth2"), seg("b", "eth2", "eth3")}, "eth2 is in segments a and b"},
		{[]Segment{seg("a", "eth1", "eth2"), seg("a", "eth3", "eth4")}, "used twice"},
		{[]Segment{seg("a", "eth1", "")}, "empty interface"},
	}
	for _, tt := range tests {
		err := checkSegments(tt.segs)
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("checkSegments(%v) = %v, want %q", tt.segs, err, tt.wantErr)
		}
	}
}

func TestSegmentsFromConfig(t *testing.T) {
	sys := t.TempDir()
	for _, ifname := range []string{"eth0", "eth1", "eth2", "eth3"} {
		if err := os.MkdirAll(filepath.Join(sys, ifname), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	parse := func(body string) *config.Config {
		t.Helper()
		c, err := config.Parse("test.toml", []byte("platform = \"generic\"\nservices = [\"forwarderd\"]\n"+body))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cfg := parse("[[segment]]\nname = \"s1\"\nports = [\"LAN1\", \"LAN2\"]\n")
	segs, absent, err := SegmentsFromConfig(cfg, sys)
	if err != nil || len(absent) != 0 {
		t.Fatal(err)
	}
	want := Segment{Name: "s1", Interfaces: [2]string{"eth1", "eth2"}, Labels: [2]string{"LAN1", "LAN2"}, MTU: config.DefaultMTU}
	if len(segs) != 1 || segs[0] != want {
		t.Errorf("segments %+v, want [%+v]", segs, want)
	}

	cfg = parse("[[segment]]\nname = \"s1\"\nports = [\"LAN1\", \"LAN2\"]\n[[segment]]\nname = \"s2\"\nports = [\"LAN3\", \"LAN4\"]\n")
	// eth4 is missing: s1 is still bridged, s2 is reported absent.
	segs, absent, err = SegmentsFromConfig(cfg, sys)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 1 || segs[0] != want {
		t.Errorf("segments %+v, want [%+v]", segs, want)
	}
	if len(absent) != 1 || absent[0].Name != "s2" || strings.Join(absent[0].Missing, ",") != "LAN4" {
		t.Errorf("absent %+v, want s2 lacking LAN4", absent)
	}
}
