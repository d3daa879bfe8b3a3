package pcapng

import (
	"bytes"
	"testing"
)

// TestWhole writes a capture in pieces of every size and wants Whole to
// count exactly the block boundaries the Reader finds.
func TestWhole(t *testing.T) {
	var stream []byte
	for _, b := range tsharkCapture().write(t) {
		stream = append(stream, b...)
	}
	// The boundaries, from the writer's blocks.
	ends := map[int64]bool{0: true}
	var off int64
	for _, b := range tsharkCapture().write(t) {
		off += int64(len(b))
		ends[off] = true
	}
	for _, piece := range []int{1, 3, 7, 12, 13, 64, 1000, len(stream)} {
		var out bytes.Buffer
		w := &Whole{W: &out}
		var last int64
		for i := 0; i < len(stream); i += piece {
			w.Write(stream[i:min(i+piece, len(stream))])
			if !ends[w.Len()] || w.Len() < last || w.Len() > int64(min(i+piece, len(stream))) {
				t.Fatalf("pieces of %d, after %d bytes: Len %d is no block boundary at or before it", piece, min(i+piece, len(stream)), w.Len())
			}
			last = w.Len()
		}
		if w.Len() != int64(len(stream)) || !bytes.Equal(out.Bytes(), stream) {
			t.Errorf("pieces of %d: Len %d of %d bytes passed on", piece, w.Len(), out.Len())
		}
	}
	// Cut short mid-block, it counts up to the last whole one.
	w := &Whole{W: &bytes.Buffer{}}
	w.Write(stream[:len(stream)-5])
	if !ends[w.Len()] || w.Len() == int64(len(stream)) || w.Len() < int64(len(stream))-2000 {
		t.Errorf("cut 5 bytes short: Len %d of %d", w.Len(), len(stream))
	}
	// Not pcapng: nothing is whole.
	w = &Whole{W: &bytes.Buffer{}}
	w.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	if w.Len() != 0 {
		t.Errorf("Len %d of a stream that is not pcapng", w.Len())
	}
}
