package bench

import "github.com/ncpos/ncpos/bench/xdptraffic"

// arrivals is what an analyzer counted of one stream in a trial. Only
// Distinct counts as received: a frame the device delivered twice, or a
// frame of another stream or trial, must never hide one it lost.
type arrivals struct {
	Distinct   uint64 // frames of this stream and trial, each counted once
	Duplicates uint64 // frames of this stream and trial that arrived again
	Foreign    uint64 // frames of another stream or trial, and no test frames
}

// kernelArrivals reads the XDP analyzer's counts for stream: its frames
// less those that arrived again, and everything else it saw as foreign.
func kernelArrivals(streams map[uint16]xdptraffic.Stream, otherTrials, notTest uint64, stream uint16) arrivals {
	a := arrivals{Foreign: otherTrials + notTest}
	for s, st := range streams {
		if s != stream {
			a.Foreign += st.Frames
			continue
		}
		a.Duplicates = min(st.Duplicated, st.Frames)
		a.Distinct = st.Frames - a.Duplicates
	}
	return a
}

// tally counts the frames an AF_XDP analyzer receives for one stream and
// trial, each sequence number once.
type tally struct {
	trial  uint16
	stream uint16
	seen   []uint64 // bitmap of sequence numbers
	arrivals
}

// maxTallySeq bounds the bitmap (64 MiB of it at the most): a sequence
// number beyond it is no frame this tester sent in one trial.
const maxTallySeq = 1 << 29

// reset starts counting trial afresh, keeping the bitmap's memory.
func (t *tally) reset(trial uint16) {
	t.trial, t.arrivals = trial, arrivals{}
	clear(t.seen)
}

// add counts one received frame and returns its stamp when it is a new
// frame of the stream and trial.
func (t *tally) add(frame []byte) (Stamp, bool) {
	st, err := ParseStamp(frame)
	if err != nil || st.Trial != t.trial || st.Stream != t.stream || st.Seq >= maxTallySeq {
		t.Foreign++
		return st, false
	}
	w, bit := st.Seq/64, uint64(1)<<(st.Seq%64)
	if int(w) >= len(t.seen) {
		// Grown by doubling: a trial's numbers come in order.
		t.seen = append(t.seen, make([]uint64, max(int(w)+1, 2*len(t.seen))-len(t.seen))...)
	}
	if t.seen[w]&bit != 0 {
		t.Duplicates++
		return st, false
	}
	t.seen[w] |= bit
	t.Distinct++
	return st, true
}
