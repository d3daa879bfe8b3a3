package lab_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bench"
	"github.com/ncpos/ncpos/bench/xdptraffic"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/lab"
)

// TestAFXDPBurst sends a stream through the afxdp engine, 4096 frames in
// all, eight times its 512 transmit frames, each frame numbered by the
// generator in its stamp and its UDP source port: every frame that arrives
// must be intact and later than the one before. A worker that reused a transmit frame
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
	g, err := l.Generator(0, 0, n) // source ports 10000 .. 10000+n-1
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	frame := frames.UDPFrame(128, 10000, 9)
	bench.PutStamp(frame, bench.Stamp{Trial: 1})
	// Paced, so that few frames are dropped for want of room in the
	// receive ring, even on a loaded machine.
	sent, err := g.Run(context.Background(), xdptraffic.Send{Frame: frame, Frames: n, RatePPS: 50_000})
	if err != nil {
		t.Fatal(err)
	}
	if sent.Frames != n {
		t.Fatalf("the generator sent %d frames, want %d", sent.Frames, n)
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
		st, err := bench.ParseStamp(f.Data)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		seq := int(st.Seq)
		want := bytes.Clone(frame)
		binary.BigEndian.PutUint16(want[34:], uint16(10000+seq))
		bench.PutStamp(want, bench.Stamp{Trial: 1, Seq: st.Seq})
		if !bytes.Equal(f.Data, want) {
			t.Fatalf("frame %d (number %d) changed in transit:\n want %x\n  got %x", i, seq, want, f.Data)
		}
		if seq <= last || seq >= n {
			t.Fatalf("frame %d is number %d after number %d: repeated or out of order", i, seq, last)
		}
		last = seq
	}
}
