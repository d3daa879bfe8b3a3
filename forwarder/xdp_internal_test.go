package forwarder

import (
	"maps"
	"testing"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder/bpf"
)

// TestPortConstants: forward and afxdp ports of at most the default MTU
// take a frame's length from its first buffer; service ports and jumbo
// ports ask the kernel.
func TestPortConstants(t *testing.T) {
	for _, c := range []struct {
		prog      string
		mtu       int
		noCapture bool
		want      map[string]uint32
	}{
		{bpf.DatapathProgPortForward, config.DefaultMTU, false, map[string]uint32{bpf.DatapathVarPortIndex: 3, bpf.DatapathVarOneBuffer: 1}},
		{bpf.DatapathProgPortXsk, 1500, true, map[string]uint32{bpf.DatapathVarPortIndex: 3, bpf.DatapathVarOneBuffer: 1, bpf.DatapathVarCaptureSupport: 0}},
		{bpf.DatapathProgPortForward, config.DefaultMTU + 1, false, map[string]uint32{bpf.DatapathVarPortIndex: 3}},
		{bpf.DatapathProgPortService, config.DefaultMTU, false, map[string]uint32{bpf.DatapathVarPortIndex: 3}},
	} {
		if got := portConstants(c.prog, 3, c.mtu, c.noCapture); !maps.Equal(got, c.want) {
			t.Errorf("%s at MTU %d: %v, want %v", c.prog, c.mtu, got, c.want)
		}
	}
}
