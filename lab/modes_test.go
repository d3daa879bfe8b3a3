package lab_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/lab"
)

// TestGenericXDP forces generic XDP (what a driver without native XDP
// gets) and wants it reported, and frames to cross unchanged.
func TestGenericXDP(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks := attachSinks(t, l, true)
	d := startForwarderd(t, l, "-xdp-mode", "generic")
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Ports {
		if p.Attach != "generic" {
			t.Errorf("%s attached %q, want generic", p.Interface, p.Attach)
		}
	}
	snd, err := l.Sender(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	frames := [][]byte{frames.UDPFrame(64, 1, 2), frames.VLAN(frames.UDPFrame(1514, 3, 4), 7), frames.ARPRequest()}
	for _, f := range frames {
		if err := snd.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sinks.Capture(len(frames), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(frames) {
		t.Fatalf("%d of %d frames crossed", len(got), len(frames))
	}
	for i := range got {
		if !bytes.Equal(got[i].Data, frames[i]) || got[i].Sink != lab.SinkID(0, 1) {
			t.Errorf("frame %d: sink %d, %x; want sink %d, %x", i, got[i].Sink, got[i].Data, lab.SinkID(0, 1), frames[i])
		}
	}
}

// TestAFXDPSendError takes the egress port down under afxdp traffic, so
// that sendto fails (ENETDOWN) where asavie/xdp would panic: forwarderd
// must live on, count the frames, report the link, and forward again once
// the port is back.
func TestAFXDPSendError(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks, err := l.AttachSinks(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sinks.Close() })
	d := startForwarderd(t, l, "-engine", "afxdp")
	snd, err := l.Sender(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	send := func(n int) {
		for i := 0; i < n; i++ {
			if err := snd.Send(frames.UDPFrame(64, uint16(i), 9)); err != nil {
				t.Fatal(err)
			}
		}
	}
	port := l.Segments[0].Ports[1]
	setLink := func(up bool) {
		pl, err := l.FW.Link(port)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SetLinkUp(pl, up); err != nil {
			t.Fatal(err)
		}
	}
	setLink(false)
	send(200)
	time.Sleep(time.Second)
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatalf("forwarderd gone after send errors: %v", err)
	}
	in := st.Ports[0]
	t.Logf("with %s down: %s drops %v; conditions %+v", port, in.Interface, in.Drops, st.Conditions)
	if in.Drops["send_error"] == 0 {
		t.Errorf("no send_error drops counted with the egress port down: %v", in.Drops)
	}
	if !health.Has(st.Conditions, health.LinkDown) || !st.Live.Live {
		t.Errorf("conditions %+v, live %v: want link_down and live", st.Conditions, st.Live)
	}
	setLink(true)
	if err := d.WaitHealthy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	before, _, _ := sinks.Count(0, 1)
	send(50)
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, _, _ := sinks.Count(0, 1)
		if after-before == 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the port came back %d of 50 frames crossed", after-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
