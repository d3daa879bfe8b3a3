package lab_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/lab"
)

// TestPortsSelfTest runs the appliance's self-test (PortTarget on plain
// interfaces, RunSelfTest) in a lab whose segment a Linux bridge joins:
// the generator and analyzer sit on the lab's traffic ends as they sit on
// the test ports of an appliance. The figures are not asserted, only that
// frames crossed and the report was written.
func TestPortsSelfTest(t *testing.T) {
	requireLab(t)
	l, err := lab.New(lab.Config{ID: "s" + strconv.FormatInt(int64(rand.IntN(36*36)), 36), Segments: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	if _, err := l.Bridge(0); err != nil {
		t.Fatal(err)
	}
	seg := l.Segments[0]
	pt, err := bench.NewPorts([]bench.PortStream{{
		Name:     "seg0",
		Sender:   bench.PortEnd{Ifname: seg.HostIfs[0], NS: seg.Hosts[0]},
		Receiver: bench.PortEnd{Ifname: seg.HostIfs[1], NS: seg.Hosts[1]},
	}}, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pt.Close(); err != nil {
			t.Errorf("closing the ports: %v", err)
		}
	})
	path := filepath.Join(t.TempDir(), "latest.json")
	st, err := bench.RunSelfTest(context.Background(), pt, bench.SelfTestPlan{
		Segments: []string{"seg0"}, Sizes: []int{64, 1518}, Trial: 200 * time.Millisecond, Path: path,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Results {
		t.Logf("%s %4d B: %.0f frames/s, %.1f Mb/s", r.Segment, r.FrameSize, r.ThroughputPPS, r.ThroughputMbps)
	}
	if !st.Passed || len(st.Results) != 2 {
		t.Errorf("report %+v: want passed with 2 results", st)
	}
}
