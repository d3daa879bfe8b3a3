package lab

import (
	"github.com/ncpos/ncpos/bench/xdptraffic"
)

// genSportBase is the first UDP source port of a lab generator's flows.
const genSportBase = 10000

// Generator prepares the bench's generator (bench/xdptraffic) on a traffic
// end: it transmits with BPF_PROG_RUN in live-frame mode, so the kernel
// sends each frame out of the veth without any socket or skb, from CPU 0,
// the management core; on a kernel that does not run live frames, from
// an AF_XDP socket, more slowly (xdptraffic.Generator.Engine). With
// flows > 1 the frames' UDP source ports cycle from genSportBase over
// that many values, so that service mode sees that many distinct
// 5-tuples.
func (l *Lab) Generator(seg, side int, flows int) (*xdptraffic.Generator, error) {
	s := l.Segments[seg]
	return xdptraffic.NewGenerator(xdptraffic.GeneratorOptions{Ifindex: s.HostIndex[side], Flows: flows,
		SportBase: genSportBase, Do: s.Hosts[side].Do, CPU: 0})
}
