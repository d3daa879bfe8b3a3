package lab_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/ipc/health"
)

// TestHealthProgress cuts the far side of a segment (its traffic end loses
// the XDP program a veth needs to take redirected frames, as a dead link
// would drop them) while traffic enters: forwarderd must report a
// tx_stalled condition on the segment while staying live, the lost frames
// must be counted (egress_lost), the condition must clear once frames
// leave again, and forwarderd's log must say when it began and ended.
func TestHealthProgress(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks := attachSinks(t, l, false)
	snd := sender(t, l)
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
				if err := snd.Send(frames.UDPFrame(64, uint16(i), 9)); err != nil {
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
			err := d.Forwarding(context.Background())
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
	err := waitHealth(false, 8*time.Second)
	if err == nil {
		t.Fatal("still healthy 8s after frames stopped leaving the segment")
	}
	t.Logf("not forwarding: %v", err)
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !st.Live.Live {
		t.Errorf("a stalled segment made forwarderd not live: %s", st.Live)
	}
	if st.Segments[0].Forwarding || !health.Has(st.Segments[0].Conditions, health.TxStalled) {
		t.Errorf("segment %s: forwarding %v, conditions %+v, want tx_stalled", st.Segments[0].Name, st.Segments[0].Forwarding, st.Segments[0].Conditions)
	}
	// The veth refuses the frames redirected into it (no XDP program on
	// its peer): the kernel's redirect tracepoints count them on the port
	// they entered.
	if len(st.Notes) > 0 {
		t.Fatalf("forwarderd cannot count redirect failures: %v", st.Notes)
	}
	if d := st.Ports[0].Drops; d["redirect_no_xmit"] == 0 {
		t.Errorf("drops on %s: %v, want redirect_no_xmit", st.Ports[0].Interface, d)
	}
	if err := sinks.Attach(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := waitHealth(true, 8*time.Second); err != nil {
		t.Errorf("not healthy again after the segment recovered: %v", err)
	}
	seg := l.Segments[0]
	for _, want := range []string{
		"condition began: tx_stalled (seg0 " + seg.Ports[1] + "): ",
		"condition ended: tx_stalled (seg0 " + seg.Ports[1] + "): ",
	} {
		var log []byte
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			log, _ = os.ReadFile(d.Log)
			if bytes.Contains(log, []byte(want)) || time.Now().After(deadline) {
				break
			}
		}
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("forwarderd's log has no %q", want)
		}
	}
}
