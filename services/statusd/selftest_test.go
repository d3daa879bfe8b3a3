package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/config"
)

func TestSelfTester(t *testing.T) {
	if err := (&selfTester{cfg: config.Default()}).ready(); err == nil || !strings.Contains(err.Error(), "no self-test cabling") {
		t.Errorf("default configuration: ready() = %v, want no cabling", err)
	}
	cfg, err := config.Parse("t.toml", []byte("platform = \"generic\"\n[[segment]]\nname = \"wan\"\nports = [\"LAN1\", \"LAN2\"]\n"+
		"[selftest]\nports = [{test = \"LAN4\", segment_port = \"LAN2\"}, {test = \"LAN3\", segment_port = \"LAN1\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sys := t.TempDir()
	s := &selfTester{cfg: cfg, sysClassNet: sys, report: filepath.Join(t.TempDir(), "latest.json")}
	if err := s.ready(); err != nil {
		t.Fatalf("ready() = %v", err)
	}
	// Interfaces missing: the run says which test ports.
	if _, err := s.run(context.Background(), nil, func(int, int, int) {}); err == nil || !strings.Contains(err.Error(), "test ports LAN3 and LAN4 of segment wan") {
		t.Errorf("run without interfaces = %v", err)
	}
	for _, n := range []string{"eth0", "eth1", "eth2", "eth3", "eth4"} {
		os.Mkdir(filepath.Join(sys, n), 0o755)
	}
	streams, segments, err := s.streams()
	want := []bench.PortStream{{Name: "wan", Sender: bench.PortEnd{Ifname: "eth3"}, Receiver: bench.PortEnd{Ifname: "eth4"}}}
	if err != nil || !slices.Equal(segments, []string{"wan"}) || !slices.Equal(streams, want) {
		t.Errorf("streams() = %+v, %v, %v; want %+v", streams, segments, err, want)
	}
	if jobs := newSelfTest(context.Background(), cfg, s.report); jobs.Ready() != nil || jobs.Run == nil {
		t.Error("newSelfTest: not ready")
	}
}
