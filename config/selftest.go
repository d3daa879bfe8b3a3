package config

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits of the self-test settings.
const (
	minSelfTestFrame = 64
	maxSelfTestFrame = 9018
	minSelfTestTrial = 100 * time.Millisecond
	maxSelfTestTrial = 60 * time.Second
)

// parseLineRate reads a line rate such as "100M", "1G", "2.5G" or "10G"
// (bits per second, SI prefixes).
func parseLineRate(s string) (float64, bool) {
	mult := 0.0
	switch {
	case strings.HasSuffix(s, "G"):
		mult = 1e9
	case strings.HasSuffix(s, "M"):
		mult = 1e6
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s[:len(s)-1]), 64)
	if err != nil || f <= 0 || f*mult > 400e9 {
		return 0, false
	}
	return f * mult, true
}

// LineBPS is the self-test's line rate in bits per second; 1 Gb/s if it
// does not parse (which validation rules out).
func (s SelfTest) LineBPS() float64 {
	if f, ok := parseLineRate(s.LineRate); ok {
		return f
	}
	return 1e9
}

// SelfTestPath is one direction of a segment the self-test can measure.
type SelfTestPath struct {
	Segment       string // segment name
	From, To      string // the segment's ports, in order
	Sender        string // test port cabled to From
	Receiver      string // test port cabled to To
	SenderIf      string // Linux interface of Sender, when resolved
	ReceiverIf    string // Linux interface of Receiver, when resolved
	SenderCable   int    // index in selftest.ports
	ReceiverCable int
}

// IsTestPort says whether port (a front-panel name) is one of the
// self-test's test ports.
func (st SelfTest) IsTestPort(port string) bool {
	return slices.ContainsFunc(st.Ports, func(c TestCable) bool { return c.Test == port })
}

// SelfTestPaths lists, in segment order, each segment whose two ports are
// both cabled to test ports; empty when the self-test cannot run.
func (c *Config) SelfTestPaths() []SelfTestPath {
	cabled := map[string]int{} // segment port -> cable index
	for i, cb := range c.SelfTest.Ports {
		cabled[cb.SegmentPort] = i
	}
	var out []SelfTestPath
	for _, s := range c.Segments {
		if len(s.Ports) != 2 {
			continue
		}
		a, okA := cabled[s.Ports[0]]
		b, okB := cabled[s.Ports[1]]
		if !okA || !okB {
			continue
		}
		out = append(out, SelfTestPath{
			Segment: s.Name, From: s.Ports[0], To: s.Ports[1],
			Sender: c.SelfTest.Ports[a].Test, Receiver: c.SelfTest.Ports[b].Test,
			SenderCable: a, ReceiverCable: b,
		})
	}
	return out
}

func (c *Config) validateSelfTest(addTo addFunc, prof *Profile) {
	st := c.SelfTest
	cablingProblems := 0
	add := func(field, format string, args ...any) {
		if strings.HasPrefix(field, "selftest.ports") {
			cablingProblems++
		}
		addTo(field, format, args...)
	}
	inSegment := map[string]string{}
	for i, s := range c.Segments {
		for _, p := range s.Ports {
			inSegment[p] = segmentLabel(s.Name, i)
		}
	}
	used := map[string]string{}     // port -> path of the cable field that uses it
	cabledAt := map[string]string{} // segment port -> path of its cable
	for i, cb := range st.Ports {
		f := indexPath("selftest.ports", i)
		switch {
		case cb.Test == "":
			add(f+".test", "missing, want the front-panel name of a spare port cabled to segment_port")
		case prof != nil && prof.Port(cb.Test) == nil:
			add(f+".test", "unknown port %q %s", cb.Test, portsHint(prof))
		case cb.Test == c.Management.Port:
			add(f+".test", "%q is the management port, want a spare data port", cb.Test)
		case inSegment[cb.Test] != "":
			add(f+".test", "port %q is in segment %q, want a spare port that no segment uses", cb.Test, inSegment[cb.Test])
		case used[cb.Test] != "":
			add(f+".test", "port %q is already cabled in %s, want at most one cable per port", cb.Test, used[cb.Test])
		default:
			used[cb.Test] = f
		}
		switch {
		case cb.SegmentPort == "":
			add(f+".segment_port", "missing, want the front-panel name of the segment port the test port is cabled to")
		case prof != nil && prof.Port(cb.SegmentPort) == nil:
			add(f+".segment_port", "unknown port %q %s", cb.SegmentPort, portsHint(prof))
		case inSegment[cb.SegmentPort] == "":
			add(f+".segment_port", "port %q is in no segment, want a port of a [[segment]]", cb.SegmentPort)
		case used[cb.SegmentPort] != "":
			add(f+".segment_port", "port %q is already cabled in %s, want at most one cable per port", cb.SegmentPort, used[cb.SegmentPort])
		default:
			used[cb.SegmentPort] = f
			cabledAt[cb.SegmentPort] = f
		}
	}
	// A cable is only useful with its segment's other port cabled too.
	for i, s := range c.Segments {
		if len(s.Ports) != 2 || s.Ports[0] == s.Ports[1] {
			continue
		}
		for k, p := range s.Ports {
			other := s.Ports[1-k]
			if f := cabledAt[p]; f != "" && cabledAt[other] == "" {
				add(f+".segment_port", "the other port of segment %q, %s, is not cabled, want a test port cabled to each of its two ports",
					segmentLabel(s.Name, i), other)
			}
		}
	}
	// A test port on a bypass pair needs the pair's other port to be a
	// test port too: only then does bypassd keep that relay in normal,
	// on the cables; otherwise it stays in bypass, which cuts the port off.
	// Checked once the cabling itself is right.
	if prof != nil && cablingProblems == 0 {
		for i, cb := range st.Ports {
			for _, bp := range prof.BypassPairs {
				if len(bp.Ports) != 2 || !slices.Contains(bp.Ports, cb.Test) {
					continue
				}
				other := bp.Ports[0]
				if other == cb.Test {
					other = bp.Ports[1]
				}
				if !st.IsTestPort(other) {
					add(indexPath("selftest.ports", i)+".test", "port %q is on bypass pair %q with %s, which is not a test port; the relay would stay in bypass and cut it off, want both ports of the pair as test ports",
						cb.Test, bp.Name, other)
				}
			}
		}
	}
	if len(st.Sizes) == 0 {
		add("selftest.sizes", "no frame sizes, want e.g. [64, 128, 256, 512, 1024, 1280, 1518]")
	}
	for i, n := range st.Sizes {
		if n < minSelfTestFrame || n > maxSelfTestFrame {
			add(indexPath("selftest.sizes", i), "%d is out of range, want a frame size between %d and %d bytes", n, minSelfTestFrame, maxSelfTestFrame)
		}
	}
	if d := st.Trial.Duration; d < minSelfTestTrial || d > maxSelfTestTrial {
		add("selftest.trial", "%q is out of range, want between 100ms and 60s", st.Trial)
	}
	c.validateExpect(add)
	if n := st.LatencyTrials; n < 1 || n > 100 {
		add("selftest.latency_trials", "%d is out of range, want 1 to 100 (RFC 2544 asks for 20)", n)
	}
	if n := st.Directions; n != 1 && n != 2 {
		add("selftest.directions", "%d is not a number of directions, want 1 (first port to second) or 2 (both at once)", n)
	}
	if _, ok := parseLineRate(st.LineRate); !ok {
		add("selftest.line_rate", "%q is not a line rate, want a number with M or G such as \"100M\", \"1G\" or \"10G\"", st.LineRate)
	}
}
