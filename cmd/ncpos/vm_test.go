package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/vm"
)

func TestSelfTestCables(t *testing.T) {
	cfg, err := config.Parse("t.toml", []byte("platform = \"qemu\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\n"+
		"[selftest]\nports = [{test = \"LAN3\", segment_port = \"LAN1\"}, {test = \"LAN4\", segment_port = \"LAN2\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cables, err := selfTestCables(cfg)
	if err != nil || !slices.Equal(cables, []vm.Cable{{A: 3, B: 1}, {A: 4, B: 2}}) {
		t.Errorf("cables %v, %v", cables, err)
	}
	if _, err := selfTestCables(config.Default()); err == nil || !strings.Contains(err.Error(), "cables no port") {
		t.Errorf("no [selftest] cables: %v", err)
	}
	cfg.Platform = "lanner-fw8865"
	if _, err := selfTestCables(cfg); err == nil || !strings.Contains(err.Error(), "the VM is the qemu platform") {
		t.Errorf("another platform: %v", err)
	}
}
