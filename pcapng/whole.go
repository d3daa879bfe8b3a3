package pcapng

import (
	"encoding/binary"
	"io"
	"math/bits"
)

// Whole passes a pcapng stream on to W and keeps count of how much of it
// is whole blocks, so that a capture cut short (an operator's ^C, a
// dropped connection) can be trimmed to a file every reader opens: what
// follows Len is the start of a block that did not arrive. It follows the
// byte order each Section Header Block gives; a stream that does not
// start with one has no whole block.
type Whole struct {
	W io.Writer

	n, whole int64            // bytes written; of which whole blocks
	head     []byte           // the current block's first bytes, up to 12
	bo       binary.ByteOrder // the section's
	bad      bool             // not a pcapng stream
}

// Len is how many of the bytes written are whole blocks.
func (w *Whole) Len() int64 { return w.whole }

func (w *Whole) Write(p []byte) (int, error) {
	n, err := w.W.Write(p)
	w.track(p[:n])
	return n, err
}

func (w *Whole) track(p []byte) {
	for len(p) > 0 && !w.bad {
		if len(w.head) < 12 {
			k := min(12-len(w.head), len(p))
			w.head = append(w.head, p[:k]...)
			p, w.n = p[k:], w.n+int64(k)
			if len(w.head) < 12 {
				return
			}
			// A section's first block says its byte order (the type
			// reads the same both ways).
			if binary.LittleEndian.Uint32(w.head) == typeSHB {
				switch binary.LittleEndian.Uint32(w.head[8:]) {
				case byteOrderMagic:
					w.bo = binary.LittleEndian
				case bits.ReverseBytes32(byteOrderMagic):
					w.bo = binary.BigEndian
				default:
					w.bo = nil
				}
			}
			if w.bo == nil || w.bo.Uint32(w.head[4:]) < 12 {
				w.bad = true
				return
			}
		}
		left := w.whole + int64(w.bo.Uint32(w.head[4:])) - w.n
		if left > int64(len(p)) {
			w.n += int64(len(p))
			return
		}
		p, w.n = p[left:], w.n+left
		w.whole, w.head = w.n, w.head[:0]
	}
}
