package forwarder

import "testing"

// TestTXFrames checks the transmit frame bookkeeping: frames come from the
// upper part of the UMEM only, in order, wrapping round, never more than
// are free, and come back by count.
func TestTXFrames(t *testing.T) {
	size := uint64(afxdpSocketOptions.FrameSize)
	lo, hi := uint64(afxdpRxFrames)*size, uint64(afxdpRxFrames+afxdpTxFrames)*size
	tx := newTXFrames()
	next := lo
	taken := 0
	for round := 0; round < 5; round++ {
		for _, k := range []int{1, 31, 200, 280} {
			k = min(k, tx.free)
			for _, d := range tx.take(k) {
				if d.Addr != next {
					t.Fatalf("round %d: frame at %d, want %d (in order)", round, d.Addr, next)
				}
				if d.Addr < lo || d.Addr >= hi || d.Addr%size != 0 {
					t.Fatalf("frame at %d: outside the transmit frames [%d, %d) or not aligned", d.Addr, lo, hi)
				}
				if next += size; next == hi {
					next = lo
				}
			}
			taken += k
		}
		if tx.free != afxdpTxFrames-taken {
			t.Fatalf("round %d: %d free after taking %d, want %d", round, tx.free, taken, afxdpTxFrames-taken)
		}
		// The kernel completes everything sent so far.
		tx.free += taken
		taken = 0
	}
	if got := tx.take(0); len(got) != 0 {
		t.Errorf("take(0) gave %d frames", len(got))
	}
}
