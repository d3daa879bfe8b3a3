package lab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/lab"
)

// TestHealthProgress cuts the far side of a segment (its traffic end loses
// the XDP program a veth needs to take redirected frames, as a dead link
// would drop them) while traffic enters: /healthz must turn 503 naming the
// segment, the lost frames must be counted (egress_lost), and health must come back
// once frames leave again.
func TestHealthProgress(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks, err := l.AttachSinks(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sinks.Close() })
	snd, err := l.Sender(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snd.Close() })
	d := startForwarderd(t, l, "-engine", "xdp")

	// send keeps traffic entering until stop is closed.
	stop := make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				sent <- nil
				return
			case <-tick.C:
				if err := snd.Send(lab.UDPFrame(64, uint16(i), 9)); err != nil {
					sent <- err
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-sent; err != nil {
			t.Error(err)
		}
	}()

	waitHealth := func(healthy bool, within time.Duration) error {
		deadline := time.Now().Add(within)
		for {
			err := d.Health(context.Background())
			if (err == nil) == healthy || time.Now().After(deadline) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := waitHealth(true, 5*time.Second); err != nil {
		t.Fatalf("not healthy while traffic flows: %v", err)
	}
	if err := sinks.Detach(0, 1); err != nil {
		t.Fatal(err)
	}
	err = waitHealth(false, 8*time.Second)
	if err == nil {
		t.Fatal("still healthy 8s after frames stopped leaving the segment")
	}
	if !strings.Contains(err.Error(), "seg0") || !strings.Contains(err.Error(), "none left") {
		t.Errorf("unhealthy for the wrong reason: %v", err)
	}
	t.Logf("unhealthy: %v", err)
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Healthy || st.Segments[0].Healthy {
		t.Errorf("status says healthy: %+v", st.Segments[0])
	}
	if st.Ports[1].Drops["egress_lost"] == 0 {
		t.Errorf("drops on %s: %v, want egress_lost", st.Ports[1].Interface, st.Ports[1].Drops)
	}
	if err := sinks.Attach(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := waitHealth(true, 8*time.Second); err != nil {
		t.Errorf("not healthy again after the segment recovered: %v", err)
	}
}
