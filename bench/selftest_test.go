package bench

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

func TestRunSelfTest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "selftest", "latest.json")
	dev := &SimDevice{LineBPS: DefaultLineBPS, CapacityPPS: 500000, Streams: 2}
	var progress []int
	st, err := RunSelfTest(context.Background(), dev, SelfTestPlan{
		Segments: []string{"wan", "lan"}, Sizes: []int{64, 1518}, Trial: 10 * time.Millisecond, Path: path,
		Progress: func(size, i, n int) { progress = append(progress, size) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Passed || len(st.Results) != 4 || len(progress) != 2 {
		t.Fatalf("report %+v, progress %v: want passed, 4 results, 2 sizes", st, progress)
	}
	for _, r := range st.Results {
		want := math.Min(500000, LinePPS(r.FrameSize, DefaultLineBPS))
		if math.Abs(r.ThroughputPPS-want)/want > 0.02 {
			t.Errorf("%s %d B: %.0f frames/s, want about %.0f", r.Segment, r.FrameSize, r.ThroughputPPS, want)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back api.SelfTest
	if err := json.Unmarshal(b, &back); err != nil || back.Summary != "RFC 2544 throughput on wan, lan" {
		t.Fatalf("written report %s: %v", b, err)
	}

	// A run that ends early still leaves a report, failed, saying why.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err = RunSelfTest(ctx, dev, SelfTestPlan{Segments: []string{"wan"}, Sizes: []int{64}, Path: path})
	if err == nil || st == nil || st.Passed || !strings.Contains(st.Summary, "context canceled") {
		t.Fatalf("cancelled run: %+v, %v", st, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"passed": false`) {
		t.Errorf("cancelled run wrote %s", b)
	}
	if _, err := RunSelfTest(context.Background(), dev, SelfTestPlan{Segments: []string{"wan"}, Sizes: []int{63}, Path: path}); err == nil {
		t.Error("size 63 accepted")
	}
	if _, err := RunSelfTest(context.Background(), dev, SelfTestPlan{Sizes: []int{64}, Path: path}); err == nil {
		t.Error("no segments accepted")
	}
}
