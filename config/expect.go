package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// anySize is the key of selftest.expect that applies to every size not
// named.
const anySize = "*"

// defaultExpect is what the self-test asks of every size when the
// configuration says nothing: 95 % of line rate, which a forwarder that
// keeps up with its ports reaches within the search's resolution.
const defaultExpect = "95%"

// Expectation is the throughput one frame size must reach in the
// self-test, per segment and direction: a share of line rate, or a frame
// rate.
type Expectation struct {
	Percent float64 // of line rate, when > 0
	PPS     float64 // frames per second, when > 0
	Text    string  // as configured
}

// ParseExpectation reads "95%" (of line rate, above 0 and at most 100) or
// a frame rate with its unit: "1.2Mpps", "800kpps", "81274pps".
func ParseExpectation(s string) (Expectation, error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 {
			return Expectation{}, fmt.Errorf("%q is not a share of line rate, want above 0%% and at most 100%%", s)
		}
		return Expectation{Percent: f, Text: t}, nil
	}
	lower := strings.ToLower(t)
	mult := 0.0
	var num string
	switch {
	case strings.HasSuffix(lower, "mpps"):
		mult, num = 1e6, lower[:len(lower)-4]
	case strings.HasSuffix(lower, "kpps"):
		mult, num = 1e3, lower[:len(lower)-4]
	case strings.HasSuffix(lower, "pps"):
		mult, num = 1, lower[:len(lower)-3]
	default:
		return Expectation{}, fmt.Errorf("%q is neither a share of line rate nor a frame rate, want e.g. \"95%%\" or \"1.2Mpps\"", s)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || f <= 0 {
		return Expectation{}, fmt.Errorf("%q is not a frame rate, want a number above 0 with pps, kpps or Mpps", s)
	}
	return Expectation{PPS: f * mult, Text: t}, nil
}

// MinPPS is the frame rate the expectation asks of size bytes on a link
// of lineBPS (whose most is lineBPS / ((size + 20) · 8), as package bench
// counts it).
func (e Expectation) MinPPS(size int, lineBPS float64) float64 {
	if e.PPS > 0 {
		return e.PPS
	}
	return e.Percent / 100 * linePPS(size, lineBPS)
}

// String says what is expected: "95% of line rate" or "1.2Mpps".
func (e Expectation) String() string {
	if e.Percent > 0 {
		return e.Text + " of line rate"
	}
	return e.Text
}

func linePPS(size int, bps float64) float64 { return bps / (float64(size+20) * 8) }

// Expectation is what the self-test asks of size: selftest.expect's entry
// for it, else its "*" entry, else 95 % of line rate. Validation has ruled
// out entries that do not parse.
func (s SelfTest) Expectation(size int) Expectation {
	for _, k := range []string{strconv.Itoa(size), anySize} {
		if v, ok := s.Expect[k]; ok {
			if e, err := ParseExpectation(v); err == nil {
				return e
			}
		}
	}
	e, _ := ParseExpectation(defaultExpect)
	return e
}

func (c *Config) validateExpect(add addFunc) {
	st := c.SelfTest
	lineBPS, lineOK := parseLineRate(st.LineRate)
	keys := make([]string, 0, len(st.Expect))
	for k := range st.Expect {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f := "selftest.expect." + strconv.Quote(k)
		e, err := ParseExpectation(st.Expect[k])
		if err != nil {
			add(f, "%v", err)
			continue
		}
		if k == anySize {
			for _, size := range st.Sizes {
				if _, named := st.Expect[strconv.Itoa(size)]; !named && lineOK && e.PPS > linePPS(size, lineBPS) {
					add(f, "%s is above line rate for %d-byte frames (%.0f pps at %s), want at most line rate", e.Text, size, linePPS(size, lineBPS), st.LineRate)
					break
				}
			}
			continue
		}
		size, err := strconv.Atoi(k)
		if err != nil {
			add(f, "%q is not a frame size, want a size of selftest.sizes or %q", k, anySize)
			continue
		}
		if !slices.Contains(st.Sizes, size) {
			add(f, "%d is not in selftest.sizes %v, want one of them or %q", size, st.Sizes, anySize)
			continue
		}
		if lineOK && e.PPS > linePPS(size, lineBPS) {
			add(f, "%s is above line rate for %d-byte frames (%.0f pps at %s), want at most line rate", e.Text, size, linePPS(size, lineBPS), st.LineRate)
		}
	}
}
