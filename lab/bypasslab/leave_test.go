package bypasslab

import (
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
)

// TestLeavingBypass measures what a segment loses on its way out of
// bypass under a paced stream: forwarderd starts again and attaches while
// the relay carries the cables, and once the hold-down has passed the
// relay switches to normal. XDP sees a frame before the lab's relay does,
// so from the attach on the forwarder carries the segment and the switch
// itself must lose nothing; what the attach loses is reported. It runs on
// the lab's relay as it is and on one that marks the links cut in bypass,
// as a hardware relay leaves them.
func TestLeavingBypass(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"sim-relay", nil},
		{"sim-relay-cutting-links", []string{"-sim-cut-links"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.flags...)
			r.wait(bypassapi.Normal, holdDown+10*time.Second)
			if err := r.fwd.Kill(); err != nil {
				t.Fatal(err)
			}
			r.wait(bypassapi.Bypass, 2*time.Second)
			r.passes("through the relay", 50)

			r.recv.Reset()
			base := r.seq
			stream, err := StartStream(r.l, 0, time.Millisecond, base)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			restarted := time.Now()
			d, err := r.l.StartForwarderd(forwarderdBin, r.dir, "-interval", "200ms")
			if err != nil {
				stream.Stop()
				t.Fatal(err)
			}
			r.fwd = d
			p, err := r.bp.WaitPair(0, bypassapi.Normal, holdDown+15*time.Second)
			if err != nil {
				stream.Stop()
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if err := stream.Stop(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			sent := stream.Sent()
			r.seq += uint64(len(sent))

			got := map[uint64]bool{}
			for _, a := range r.recv.Arrivals() {
				got[a.Seq] = true
			}
			// The switch's instant is bypassd's, read back from the relay:
			// a frame sent a few milliseconds before it may meet the
			// relay after it.
			switched := p.Since.Add(-5 * time.Millisecond)
			var before, after []time.Time
			for i, at := range sent {
				if got[base+uint64(i)] {
					continue
				}
				if at.Before(switched) {
					before = append(before, at)
				} else {
					after = append(after, at)
				}
			}
			since := func(at time.Time) time.Duration { return at.Sub(restarted).Round(time.Millisecond) }
			t.Logf("%d frames sent, one a millisecond, from 300 ms before forwarderd started again to 1 s after the relay's switch to normal (%v after the start)",
				len(sent), since(p.Since))
			if len(before) > 0 {
				t.Logf("lost while the relay was in bypass (forwarderd attaching): %d, sent %v to %v after the start", len(before), since(before[0]), since(before[len(before)-1]))
			} else {
				t.Logf("lost while the relay was in bypass (forwarderd attaching): none")
			}
			if len(after) > 0 {
				t.Errorf("lost from the relay's switch to normal on: %d of the frames sent %v to %v after the start (switch at %v)",
					len(after), since(after[0]), since(after[len(after)-1]), since(p.Since))
			} else {
				t.Logf("lost from the relay's switch to normal on: none")
			}
			r.passes("through the forwarder after the switch", 50)
		})
	}
}
