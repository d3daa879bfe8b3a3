package lab_test

import (
	"context"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/internal/frames"
)

// TestKillLeavesNothing kills forwarderd with SIGKILL, as a crash would,
// and wants no XDP program left on any port (a stale program would
// black-hole the segment behind the bypass supervisor's back), then starts
// it again and wants frames to cross again.
func TestKillLeavesNothing(t *testing.T) {
	for _, engine := range []string{forwarder.EngineXDP, forwarder.EngineAFXDP} {
		t.Run(engine, func(t *testing.T) {
			l := newLab(t, 1, 1)
			sinks := attachSinks(t, l, false)
			snd := sender(t, l)
			passes := func(what string) {
				t.Helper()
				before, _, _ := sinks.Count(0, 1)
				for i := 0; i < 10; i++ {
					if err := snd.Send(frames.UDPFrame(64, 1, 2)); err != nil {
						t.Fatal(err)
					}
				}
				deadline := time.Now().Add(3 * time.Second)
				for {
					after, _, _ := sinks.Count(0, 1)
					if after-before == 10 {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: %d of 10 frames crossed", what, after-before)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}

			d := startForwarderd(t, l, "-engine", engine)
			passes("first forwarderd")
			if att, err := l.AttachedXDP(); err != nil || len(att) != 2 {
				t.Fatalf("attached while running: %v (%v), want both ports", att, err)
			}
			if err := d.Kill(); err != nil {
				t.Fatal(err)
			}
			// The kernel releases the links when the last descriptor
			// closes, which is when the process is reaped.
			deadline := time.Now().Add(5 * time.Second)
			for {
				att, err := l.AttachedXDP()
				if err != nil {
					t.Fatal(err)
				}
				if len(att) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after SIGKILL still attached: %v", att)
				}
				time.Sleep(50 * time.Millisecond)
			}

			d2 := startForwarderd(t, l, "-engine", engine)
			passes("restarted forwarderd")
			if err := d2.Forwarding(context.Background()); err != nil {
				t.Errorf("restarted forwarderd unhealthy: %v", err)
			}
		})
	}
}
