package forwarder

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

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

// TestLoadPrograms: programs come back in the order of their loads; when
// loads fail, the first one's error comes back alone and none of the
// programs that loaded stays open.
func TestLoadPrograms(t *testing.T) {
	spec := &ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}}
	probe, err := ebpf.NewProgram(spec)
	if err != nil {
		t.Skipf("loading an XDP program: %v", err)
	}
	probe.Close()

	var made []*ebpf.Program
	var mu sync.Mutex
	load := func(fail int) func(int) (*ebpf.Program, error) {
		return func(i int) (*ebpf.Program, error) {
			if i == fail {
				return nil, fmt.Errorf("port %d refused", i)
			}
			p, err := ebpf.NewProgram(spec)
			if err == nil {
				mu.Lock()
				made = append(made, p)
				mu.Unlock()
			}
			return p, err
		}
	}

	progs, err := loadPrograms(4, load(-1))
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 4 {
		t.Fatalf("%d programs, want 4", len(progs))
	}
	for i, p := range progs {
		if p == nil || p.FD() < 0 {
			t.Errorf("program %d not loaded", i)
		}
		p.Close()
	}

	made = nil
	progs, err = loadPrograms(4, func(i int) (*ebpf.Program, error) {
		if i == 3 {
			return nil, fmt.Errorf("port %d refused", i)
		}
		return load(2)(i)
	})
	if err == nil || err.Error() != "port 2 refused" || progs != nil {
		t.Fatalf("got %v, %v; want the first failed load's error alone and no programs", progs, err)
	}
	if len(made) != 2 {
		t.Fatalf("%d programs loaded beside the failures, want 2", len(made))
	}
	for _, p := range made {
		if p.FD() >= 0 {
			t.Errorf("a program loaded beside the failure is still open (fd %d)", p.FD())
		}
	}
}

// BenchmarkLoadPorts weighs what loading six forward ports' programs
// costs at a start, one after the other and as the engine loads them,
// side by side: the kernel's verification of each is most of it.
func BenchmarkLoadPorts(b *testing.B) {
	spec, err := datapathSpec()
	if err != nil {
		b.Fatal(err)
	}
	e := &xdpEngine{spec: spec, progName: bpf.DatapathProgPortForward}
	if e.egress, err = newSharedMap(spec, bpf.DatapathMapEgress, 0); err != nil {
		b.Skipf("creating a BPF map: %v", err)
	}
	defer e.egress.Close()
	if e.counts, err = newSharedMap(spec, bpf.DatapathMapPortCounts, 0); err != nil {
		b.Fatal(err)
	}
	defer e.counts.Close()
	if e.lldp, err = newLLDPRing(spec, nil); err != nil {
		b.Fatal(err)
	}
	defer e.lldp.close()
	if e.capture, err = newCaptureMaps(spec); err != nil {
		b.Fatal(err)
	}
	defer e.capture.close()
	e.maps = e.capture.add(e.lldp.add(map[string]*ebpf.Map{bpf.DatapathMapEgress: e.egress, bpf.DatapathMapPortCounts: e.counts}))
	seg := &Segment{MTU: config.DefaultMTU}
	var ports []*port
	for i := range 6 {
		ports = append(ports, &port{slot: i, segment: seg})
	}
	closeAll := func(progs []*ebpf.Program) {
		for _, p := range progs {
			p.Close()
		}
	}
	b.Run("one-after-the-other", func(b *testing.B) {
		for b.Loop() {
			var progs []*ebpf.Program
			for _, p := range ports {
				prog, err := loadPortProgram(spec, e.progName, p.slot, seg.MTU, e.maps, false)
				if err != nil {
					b.Fatal(err)
				}
				progs = append(progs, prog)
			}
			closeAll(progs)
		}
	})
	b.Run("side-by-side", func(b *testing.B) {
		for b.Loop() {
			progs, err := e.loadPorts(ports, &Options{})
			if err != nil {
				b.Fatal(err)
			}
			closeAll(progs)
		}
	})
}
