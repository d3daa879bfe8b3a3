package lab_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/testenv"
)

// TestCoreAssociation gives each port veth two queues and checks that
// forwarderd sets the queue count to its forwarding cores and maps every
// queue to one of them, by itself; with afxdp, one socket per queue must
// forward frames from whichever queue they arrive on.
func TestCoreAssociation(t *testing.T) {
	if runtime.NumCPU() < 2 {
		// CI's machines have two: there the lab's requirement makes
		// this a failure, not a quiet skip.
		testenv.Need(t, testenv.Lab, errors.New("needs two CPUs, this machine has one"))
	}
	tests := []struct {
		engine, cores string
		wantFwd       int
		wantChannels  string
	}{
		{"xdp", "0", runtime.NumCPU() - 1, "queues"},
		{"afxdp", "2", 2, "2 queues"},
	}
	for _, tt := range tests {
		t.Run(tt.engine+"-cores"+tt.cores, func(t *testing.T) {
			l := newLab(t, 1, 2)
			sinks, err := l.AttachSinks(false)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sinks.Close() })
			d := startForwarderd(t, l, "-engine", tt.engine, "-cores", tt.cores)
			st, err := d.Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			plan := st.Cores
			t.Logf("forwarding %v management %v %s", plan.Forwarding, plan.Management, plan.Note)
			if len(plan.Forwarding) != tt.wantFwd {
				t.Errorf("%d forwarding cores, want %d", len(plan.Forwarding), tt.wantFwd)
			}
			for _, p := range plan.Ports {
				t.Logf("%s: %s", p.Interface, p.Channels)
				if !strings.Contains(p.Channels, tt.wantChannels) {
					t.Errorf("%s channels %q, want %q", p.Interface, p.Channels, tt.wantChannels)
				}
				if len(p.Queues) != min(2, len(plan.Forwarding)) {
					t.Errorf("%s: %d queues, want %d", p.Interface, len(p.Queues), min(2, len(plan.Forwarding)))
				}
				for _, q := range p.Queues {
					if !contains(plan.Forwarding, q.CPU) {
						t.Errorf("%s queue %d on cpu %d, not a forwarding core %v", p.Interface, q.Queue, q.CPU, plan.Forwarding)
					}
				}
			}
			// Frames from several flows (spread over queues by the
			// sender's hash) all cross.
			snd, err := l.Sender(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer snd.Close()
			const n = 200
			for i := 0; i < n; i++ {
				if err := snd.Send(frames.UDPFrame(64, uint16(1000+i), 9)); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				got, _, _ := sinks.Count(0, 1)
				if got == n {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d frames crossed", got, n)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
