// Package bench is the RFC 2544 self-test of ncpos: line-rate arithmetic,
// the test frames (UDP, sequence number and timestamp in the payload, many
// flows), the throughput search, latency, frame-loss and back-to-back
// procedures over a Trial (a simulated device in unit tests, AF_XDP
// traffic in the lab and on the appliance), and the reports: a text table
// like NCPBench's, JSON, CSV, an SVG chart and the self-test
// report statusd shows.
package bench

import (
	"fmt"
	"math"
)

// overhead is what each frame costs on the wire besides its own bytes:
// 7 bytes of preamble, 1 of start-of-frame delimiter and 12 of
// inter-frame gap.
const overhead = 20

// Frame sizes, as RFC 2544 counts them: from the destination MAC to the
// FCS inclusive.
const (
	minFrameSize   = 64
	maxFrameSize   = 1518
	maxJumboSize   = 9018
	DefaultLineBPS = 1e9
)

// RFC2544Sizes are the frame sizes RFC 2544 §9.1 names for Ethernet.
var RFC2544Sizes = []int{64, 128, 256, 512, 1024, 1280, 1518}

// LinePPS is the most frames of size bytes per second a link of bps bits
// per second carries: bps / ((size + 20) * 8). 64-byte frames at 1 Gb/s:
// 1,488,095.2; 1518-byte frames: 81,274.4.
func LinePPS(size int, bps float64) float64 {
	return bps / (float64(size+overhead) * 8)
}

// linePPSInt is LinePPS rounded down, as the tables print it.
func linePPSInt(size int, bps float64) uint64 {
	return uint64(math.Floor(LinePPS(size, bps)))
}

// BitsPerSecond is the rate of the frames themselves (FCS included,
// preamble and gap excluded) at pps frames per second, as a tester reports
// "Mbps" or "Gbps": 1,488,095 64-byte frames/s are 761.9 Mb/s.
func BitsPerSecond(pps float64, size int) float64 { return pps * float64(size) * 8 }

// PercentOfLine is pps as a percentage of the line rate at size.
func PercentOfLine(pps float64, size int, bps float64) float64 {
	return 100 * pps / LinePPS(size, bps)
}

// CheckSize says why size is not a frame size the bench sends, or nil.
func CheckSize(size int, jumbo bool) error {
	max := maxFrameSize
	if jumbo {
		max = maxJumboSize
	}
	switch {
	case size < minFrameSize:
		return fmt.Errorf("frame size %d is below the Ethernet minimum of %d bytes", size, minFrameSize)
	case size > max && !jumbo:
		return fmt.Errorf("frame size %d is above the Ethernet maximum of %d bytes (jumbo frames need -jumbo)", size, max)
	case size > max:
		return fmt.Errorf("frame size %d is above the jumbo maximum of %d bytes", size, max)
	}
	return nil
}

// CheckRate says why rate (frames per second) cannot be offered at size
// on a line of bps, or nil. A rate may exceed the exact line rate by a
// rounding error only.
func CheckRate(pps float64, size int, bps float64) error {
	if pps <= 0 || math.IsNaN(pps) {
		return fmt.Errorf("rate %.0f frames/s is not positive", pps)
	}
	if line := LinePPS(size, bps); pps > line*(1+1e-9)+0.5 {
		return fmt.Errorf("rate %.0f frames/s of %d bytes is above the line rate of %.0f frames/s at %s",
			pps, size, line, FormatBPS(bps))
	}
	return nil
}

// FormatBPS prints a line rate: "1 Gb/s", "10 Gb/s", "100 Mb/s".
func FormatBPS(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%g Gb/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%g Mb/s", bps/1e6)
	}
	return fmt.Sprintf("%g b/s", bps)
}
