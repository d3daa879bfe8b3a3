package lab_test

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/lab"
)

// TestAFXDPBurst sends bursts through the afxdp engine, 4096 frames in
// all, eight times its 512 transmit frames, each frame numbered in its UDP
// source port by the generator: every frame that arrives must be intact
// and later than the one before. A worker that reused a transmit frame
// before the kernel had sent it would deliver a frame twice or garbled.
func TestAFXDPBurst(t *testing.T) {
	l := newLab(t, 1, 1)
	sinks, err := l.AttachSinks(true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sinks.Close() })
	startForwarderd(t, l, "-engine", "afxdp", "-mode", "forward")

	const n = 4096
	g, err := l.Generator(0, 0, n+1) // source ports 10001 .. 10000+n
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	frame := frames.UDPFrame(128, 10000, 9)
	// Bursts of half a ring, so that few frames are dropped for want of
	// room in the receive ring, even on a loaded machine. From one CPU:
	// the generator numbers frames per CPU.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu0, old unix.CPUSet
	cpu0.Set(0)
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	if err := unix.SchedSetaffinity(0, &cpu0); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &old)
	for range n / 256 {
		if err := g.Send(frame, 256); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sinks.Capture(n, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Frames may be missing (a worker kept off its core), but enough
	// must arrive to have gone round the transmit frames twice.
	if len(got) <= 2*512 {
		t.Fatalf("%d of %d frames arrived, want more than %d", len(got), n, 2*512)
	}
	t.Logf("%d of %d frames arrived", len(got), n)
	last := -1
	for i, f := range got {
		if f.Sink != lab.SinkID(0, 1) || len(f.Data) != len(frame) {
			t.Fatalf("frame %d: %d bytes at sink %d, want %d bytes at sink %d", i, len(f.Data), f.Sink, len(frame), lab.SinkID(0, 1))
		}
		seq := int(binary.BigEndian.Uint16(f.Data[34:])) - 10000
		want := bytes.Clone(frame)
		binary.BigEndian.PutUint16(want[34:], uint16(10000+seq))
		if !bytes.Equal(f.Data, want) {
			t.Fatalf("frame %d (number %d) changed in transit:\n want %x\n  got %x", i, seq, want, f.Data)
		}
		if seq <= last || seq > n {
			t.Fatalf("frame %d is number %d after number %d: repeated or out of order", i, seq, last)
		}
		last = seq
	}
}
