package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ncpos/ncpos/forwarder"
)

func TestOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ncpos.toml")
	cfg := `platform = "generic"
services = ["forwarderd"]
[forwarder]
engine = "afxdp"
mode = "service"
cores = 3
flow_table_size = 4096
[[segment]]
name = "s1"
ports = ["LAN1", "LAN2"]
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	seg, err := forwarder.ParseSegmentFlag("lab=veth0,veth1")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := options(path, []forwarder.Segment{seg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Engine != "afxdp" || opts.Mode != "service" || opts.Cores != 3 || opts.FlowTableSize != 4096 {
		t.Errorf("options %+v do not carry the configuration's forwarder section", opts)
	}
	if len(opts.Segments) != 1 || opts.Segments[0] != seg {
		t.Errorf("segments %+v, want the -segment flag's %+v", opts.Segments, seg)
	}
	if _, err := options(filepath.Join(t.TempDir(), "missing.toml"), nil, nil); err == nil {
		t.Error("a missing -config file was accepted")
	}
}
