package bench

import (
	"testing"

	"github.com/ncpos/ncpos/bench/xdptraffic"
)

// Duplicates and foreign frames are reported, never counted as received:
// 10 frames sent, 8 distinct back, 2 of them twice, and frames of another
// stream, another trial and no test frames beside them is 20 % loss.
func TestArrivalsHideNoLoss(t *testing.T) {
	b, err := NewBuilder(FrameSpec{Size: 64, Stream: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewBuilder(FrameSpec{Size: 64, Stream: 2})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(b *Builder, trial uint16, seq uint32) []byte {
		return b.Write(make([]byte, b.Len()), trial, seq, 0)
	}
	tl := &tally{stream: 1}
	tl.reset(7)
	for _, seq := range []uint32{0, 1, 2, 3, 3, 4, 5, 5, 6, 7} {
		tl.add(frame(b, 7, seq))
	}
	tl.add(frame(other, 7, 8)) // another stream
	tl.add(frame(b, 6, 9))     // another trial
	tl.add([]byte("not a test frame at all, just bytes on the wire......."))
	want := arrivals{Distinct: 8, Duplicates: 2, Foreign: 3}
	if tl.arrivals != want {
		t.Errorf("AF_XDP tally %+v, want %+v", tl.arrivals, want)
	}
	c := StreamCount{Sent: 10, Received: tl.Distinct}
	if got := c.LossPercent(); got != 20 {
		t.Errorf("loss %.1f %%, want 20", got)
	}
	tl.reset(8)
	if tl.add(frame(b, 8, 3)); tl.arrivals != (arrivals{Distinct: 1}) {
		t.Errorf("after reset: %+v", tl.arrivals)
	}

	// The XDP analyzer's counts: frames include those that came again.
	k := kernelArrivals(map[uint16]xdptraffic.Stream{1: {Frames: 10, Duplicated: 2}, 2: {Frames: 1}}, 1, 1, 1)
	if k != want {
		t.Errorf("XDP analyzer %+v, want %+v", k, want)
	}
}
