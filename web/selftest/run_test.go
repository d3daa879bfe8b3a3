package selftest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/config"
)

func TestSelfTester(t *testing.T) {
	if err := (&selfTester{config: config.Default}).ready(); err == nil || !strings.Contains(err.Error(), "no self-test cabling") {
		t.Errorf("default configuration: ready() = %v, want no cabling", err)
	}
	cfg, err := config.Parse("t.toml", []byte("platform = \"generic\"\n[[segment]]\nname = \"wan\"\nports = [\"LAN1\", \"LAN2\"]\n"+
		"[selftest]\nports = [{test = \"LAN4\", segment_port = \"LAN2\"}, {test = \"LAN3\", segment_port = \"LAN1\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sys := t.TempDir()
	s := &selfTester{config: func() *config.Config { return cfg }, sysClassNet: sys, report: filepath.Join(t.TempDir(), "latest.json")}
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
	wantSeg := []Segment{{Name: "wan", Direction: "LAN1 → LAN2"}}
	if err != nil || !slices.Equal(segments, wantSeg) || !slices.Equal(streams, want) {
		t.Errorf("streams() = %+v, %v, %v; want %+v", streams, segments, err, want)
	}
	// Both directions at once: the same streams, each segment with its
	// reverse direction.
	cfg.SelfTest.Directions = 2
	if _, segments, err := s.streams(); err != nil || len(segments) != 1 || segments[0].Reverse != "LAN2 → LAN1" {
		t.Errorf("streams() with directions = 2: %+v, %v; want seg wan reversed as LAN2 → LAN1", segments, err)
	}
	cfg.SelfTest.Directions = 1
	if jobs := New(context.Background(), func() *config.Config { return cfg }, s.report); jobs.Ready() != nil || jobs.Run == nil {
		t.Error("NewReport: not ready")
	}
}

// TestSelfTestRefusesBeforeSending: sizes out of range are refused before
// a port is touched, and a test port without link is named.
func TestSelfTestRefusesBeforeSending(t *testing.T) {
	cfg, err := config.Parse("t.toml", []byte("platform = \"generic\"\n[[segment]]\nname = \"wan\"\nports = [\"LAN1\", \"LAN2\"]\n"+
		"[selftest]\nports = [{test = \"LAN4\", segment_port = \"LAN2\"}, {test = \"LAN3\", segment_port = \"LAN1\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sys := t.TempDir()
	for _, n := range []string{"eth0", "eth1", "eth2", "eth3", "eth4"} {
		os.Mkdir(filepath.Join(sys, n), 0o755)
	}
	report := filepath.Join(t.TempDir(), "latest.json")
	s := &selfTester{config: func() *config.Config { return cfg }, sysClassNet: sys, report: report}
	if _, err := s.run(context.Background(), []int{64, 20000}, func(int, int, int) {}); err == nil || !strings.Contains(err.Error(), "20000") {
		t.Errorf("size 20000: %v", err)
	}
	if _, err := os.Stat(report); err == nil {
		t.Error("a refused run wrote a report")
	}

	streams, _, err := s.streams()
	if err != nil {
		t.Fatal(err)
	}
	ports := s.testPorts(streams)
	want := []testPort{{"LAN3", "eth3", "LAN1"}, {"LAN4", "eth4", "LAN2"}}
	if !slices.Equal(ports, want) {
		t.Errorf("test ports %+v, want %+v", ports, want)
	}
	os.WriteFile(filepath.Join(sys, "eth3", "carrier"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(sys, "eth4", "carrier"), []byte("0\n"), 0o644)
	err = waitCarrier(context.Background(), sys, ports, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "test port LAN4 (eth4), cabled to LAN2: no link after 300ms") || strings.Contains(err.Error(), "LAN3") {
		t.Errorf("LAN4 without link: %v", err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		os.WriteFile(filepath.Join(sys, "eth4", "carrier"), []byte("1\n"), 0o644)
	}()
	if err := waitCarrier(context.Background(), sys, ports, 5*time.Second); err != nil {
		t.Errorf("link found after 200 ms: %v", err)
	}
}
