package forwarder

import "github.com/ncpos/ncpos/forwarder/bpf"

// portCounters are one port's datapath counters, whichever engine keeps
// them: frames that entered, were handed on to the peer, were dropped (by
// reason) or malformed (by reason).
type portCounters struct {
	RxPackets, RxBytes uint64
	Passed             uint64
	Malformed          uint64
	Drops              [numDrops]uint64
	Reasons            [numMalformed]uint64
}

func (c *portCounters) add(s bpf.DatapathPortStats) {
	c.RxPackets += s.RxPackets
	c.RxBytes += s.RxBytes
	c.Passed += s.Passed
	c.Malformed += s.Malformed
	for i := 0; i < bpfDrops && i < len(s.Drop); i++ {
		c.Drops[i] += s.Drop[i]
	}
	for i := range c.Reasons {
		c.Reasons[i] += s.Reason[i]
	}
}

// merge adds o into c.
func (c *portCounters) merge(o *portCounters) {
	c.RxPackets += o.RxPackets
	c.RxBytes += o.RxBytes
	c.Passed += o.Passed
	c.Malformed += o.Malformed
	for i := range c.Drops {
		c.Drops[i] += o.Drops[i]
	}
	for i := range c.Reasons {
		c.Reasons[i] += o.Reasons[i]
	}
}
