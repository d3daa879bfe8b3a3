package lab_test

import (
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/frames"
)

// TestSKBSink counts at tc ingress what afxdp transmits (socket buffers),
// as the bench does, and gets every frame.
func TestSKBSink(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks := attachSinks(t, l, false)
	restore, err := sinks.SKBSink(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	startForwarderd(t, l, "-engine", "afxdp", "-mode", "forward")
	snd, err := l.Sender(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snd.Close() })
	frame := frames.UDPFrame(100, 10000, 9)
	const n = 50
	for range n {
		if err := snd.Send(frame); err != nil {
			t.Fatal(err)
		}
	}
	var pkts, byts uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pkts, byts, err = sinks.Count(0, 1); err != nil {
			t.Fatal(err)
		}
		if pkts >= n {
			break
		}
	}
	if pkts != n || byts != n*uint64(len(frame)) {
		t.Errorf("tc sink counted %d frames, %d bytes; want %d, %d", pkts, byts, n, n*len(frame))
	}
	// Back to the XDP sink, which counts from where the tc one stopped.
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(frame); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); pkts == n && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pkts, _, err = sinks.Count(0, 1); err != nil {
			t.Fatal(err)
		}
	}
	if pkts != n+1 {
		t.Errorf("after restoring the XDP sink: %d frames counted, want %d", pkts, n+1)
	}
}
