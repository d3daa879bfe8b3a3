package config

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// cabled is a valid segment with both ports cabled to the spare ports.
const cabled = "[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\n[selftest]\n"

func TestSelfTestRules(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"cabled", cabled + "ports = [{test = \"LAN3\", segment_port = \"LAN1\"}, {test = \"LAN4\", segment_port = \"LAN2\"}]\n", nil},
		{"as array of tables", cabled + "[[selftest.ports]]\ntest = \"LAN3\"\nsegment_port = \"LAN1\"\n[[selftest.ports]]\ntest = \"LAN4\"\nsegment_port = \"LAN2\"\n", nil},
		{"test port unknown", cabled + "ports = [\n  {test = \"LAN3\", segment_port = \"LAN1\"},\n  {test = \"LAN9\", segment_port = \"LAN2\"},\n]\n", []string{
			`ncpos.toml:7: selftest.ports[1].test: unknown port "LAN9" (platform "qemu" has MGMT, LAN1, LAN2, LAN3, LAN4)`}},
		{"test port is management", cabled + "ports = [{test = \"LAN3\", segment_port = \"LAN1\"}, {test = \"MGMT\", segment_port = \"LAN2\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[1].test: "MGMT" is the management port, want a spare data port`}},
		{"test port in a segment", cabled + "ports = [{test = \"LAN3\", segment_port = \"LAN1\"}, {test = \"LAN1\", segment_port = \"LAN2\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[1].test: port "LAN1" is in segment "s", want a spare port that no segment uses`}},
		{"segment port in no segment", cabled + "ports = [{test = \"LAN3\", segment_port = \"LAN4\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[0].segment_port: port "LAN4" is in no segment, want a port of a [[segment]]`}},
		{"test port twice", cabled + "ports = [{test = \"LAN3\", segment_port = \"LAN1\"}, {test = \"LAN3\", segment_port = \"LAN2\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[1].test: port "LAN3" is already cabled in selftest.ports[0], want at most one cable per port`}},
		{"segment port twice", cabled + "ports = [{test = \"LAN3\", segment_port = \"LAN1\"}, {test = \"LAN4\", segment_port = \"LAN1\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[1].segment_port: port "LAN1" is already cabled in selftest.ports[0], want at most one cable per port`,
			`ncpos.toml:5: selftest.ports[0].segment_port: the other port of segment "s", LAN2, is not cabled, want a test port cabled to each of its two ports`}},
		{"one side only", cabled + "ports = [{test = \"LAN3\", segment_port = \"LAN2\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[0].segment_port: the other port of segment "s", LAN1, is not cabled, want a test port cabled to each of its two ports`}},
		{"missing fields", cabled + "ports = [{test = \"LAN3\"}, {segment_port = \"LAN2\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[0].segment_port: missing, want the front-panel name of the segment port the test port is cabled to`,
			`ncpos.toml:5: selftest.ports[1].test: missing, want the front-panel name of a spare port cabled to segment_port`,
			`ncpos.toml:5: selftest.ports[1].segment_port: the other port of segment "s", LAN1, is not cabled, want a test port cabled to each of its two ports`}},
		{"sizes", cabled + "sizes = [64, 63, 9019]\n", []string{
			`ncpos.toml:5: selftest.sizes[1]: 63 is out of range, want a frame size between 64 and 9018 bytes`,
			`ncpos.toml:5: selftest.sizes[2]: 9019 is out of range, want a frame size between 64 and 9018 bytes`}},
		{"no sizes", cabled + "sizes = []\n", []string{
			`ncpos.toml:5: selftest.sizes: no frame sizes, want e.g. [64, 128, 256, 512, 1024, 1280, 1518]`}},
		{"trial", cabled + "trial = \"2m\"\n", []string{
			`ncpos.toml:5: selftest.trial: "120s" is out of range, want between 100ms and 60s`}},
		{"line rate", cabled + "line_rate = \"fast\"\n", []string{
			`ncpos.toml:5: selftest.line_rate: "fast" is not a line rate, want a number with M or G such as "100M", "1G" or "10G"`}},
		{"expect", cabled + "expect = { \"*\" = \"90%\", \"64\" = \"1.2Mpps\", \"1518\" = \"81kpps\" }\n", nil},
		{"expect not parsed", cabled + "expect = { \"*\" = \"fast\", \"64\" = \"0%\", \"128\" = \"101%\", \"256\" = \"-3pps\" }\n", []string{
			`ncpos.toml:5: selftest.expect."*": "fast" is neither a share of line rate nor a frame rate, want e.g. "95%" or "1.2Mpps"`,
			`ncpos.toml:5: selftest.expect."128": "101%" is not a share of line rate, want above 0% and at most 100%`,
			`ncpos.toml:5: selftest.expect."256": "-3pps" is not a frame rate, want a number above 0 with pps, kpps or Mpps`,
			`ncpos.toml:5: selftest.expect."64": "0%" is not a share of line rate, want above 0% and at most 100%`}},
		{"expect above line rate", cabled + "expect = { \"64\" = \"1.5Mpps\" }\n", []string{
			`ncpos.toml:5: selftest.expect."64": 1.5Mpps is above line rate for 64-byte frames (1488095 pps at 1G), want at most line rate`}},
		{"expect any above line rate", cabled + "expect = { \"*\" = \"100kpps\", \"64\" = \"50%\" }\n", []string{
			`ncpos.toml:5: selftest.expect."*": 100kpps is above line rate for 1280-byte frames (96154 pps at 1G), want at most line rate`}},
		{"expect size not measured", cabled + "sizes = [64, 1518]\nexpect = { \"512\" = \"90%\", \"jumbo\" = \"90%\" }\n", []string{
			`ncpos.toml:6: selftest.expect."512": 512 is not in selftest.sizes [64 1518], want one of them or "*"`,
			`ncpos.toml:6: selftest.expect."jumbo": "jumbo" is not a frame size, want a size of selftest.sizes or "*"`}},
		{"test port on a segment's pair", "[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN4\"]\n[selftest]\nports = [{test = \"LAN2\", segment_port = \"LAN1\"}, {test = \"LAN3\", segment_port = \"LAN4\"}]\n", []string{
			`ncpos.toml:5: selftest.ports[0].test: port "LAN2" is on bypass pair "pair1" with LAN1, which is not a test port; the relay would stay in bypass and cut it off, want both ports of the pair as test ports`,
			`ncpos.toml:5: selftest.ports[1].test: port "LAN3" is on bypass pair "pair2" with LAN4, which is not a test port; the relay would stay in bypass and cut it off, want both ports of the pair as test ports`}},
		{"latency trials", cabled + "latency_trials = 0\n", []string{
			`ncpos.toml:5: selftest.latency_trials: 0 is out of range, want 1 to 100 (RFC 2544 asks for 20)`}},
		{"directions", cabled + "directions = 3\n", []string{
			`ncpos.toml:5: selftest.directions: 3 is not a number of directions, want 1 (first port to second) or 2 (both at once)`}},
		{"unknown cable key", cabled + "ports = [{test = \"LAN3\", to = \"LAN1\"}]\n", nil}, // checked below
	}
	for _, tt := range tests[:len(tests)-1] {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	got := strings.Join(problems(t, tests[len(tests)-1].text), "\n")
	if !strings.Contains(got, "selftest.ports[0].to: unknown key") {
		t.Errorf("unknown key in a cable: %s", got)
	}
}

func TestSelfTestExpectation(t *testing.T) {
	c, err := Parse("t.toml", []byte(cabled+"expect = { \"64\" = \"60%\", \"1518\" = \"80kpps\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		size int
		text string
		pps  float64
	}{
		{64, "60% of line rate", 0.6 * 1e9 / (84 * 8)},
		{1518, "80kpps", 80000},
		{512, "95% of line rate", 0.95 * 1e9 / (532 * 8)}, // "*" from the defaults
	} {
		e := c.SelfTest.Expectation(tc.size)
		if e.String() != tc.text || math.Abs(e.MinPPS(tc.size, c.SelfTest.LineBPS())-tc.pps) > 1e-6 {
			t.Errorf("size %d: %q, %v pps; want %q, %v", tc.size, e, e.MinPPS(tc.size, c.SelfTest.LineBPS()), tc.text, tc.pps)
		}
	}
}

func TestSelfTestDefaultsAndPaths(t *testing.T) {
	c, err := Parse("t.toml", []byte(cabled+"ports = [{test = \"LAN4\", segment_port = \"LAN2\"}, {test = \"LAN3\", segment_port = \"LAN1\"}]\nline_rate = \"2.5G\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.SelfTest.Sizes, []int{64, 128, 256, 512, 1024, 1280, 1518}) || c.SelfTest.Trial.Duration != 2*time.Second {
		t.Errorf("defaults: %+v", c.SelfTest)
	}
	if c.SelfTest.LineBPS() != 2.5e9 {
		t.Errorf("LineBPS = %g, want 2.5e9", c.SelfTest.LineBPS())
	}
	paths := c.SelfTestPaths()
	want := []SelfTestPath{{Segment: "s", From: "LAN1", To: "LAN2", Sender: "LAN3", Receiver: "LAN4", SenderCable: 1, ReceiverCable: 0}}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %+v, want %+v", paths, want)
	}
	if p := Default().SelfTestPaths(); len(p) != 0 {
		t.Errorf("the default cables nothing, got %+v", p)
	}
	for in, want := range map[string]float64{"100M": 1e8, "1G": 1e9, "10G": 1e10, "G": 0, "1g": 0, "-1G": 0, "1T": 0} {
		if got, _ := parseLineRate(in); got != want {
			t.Errorf("ParseLineRate(%q) = %g, want %g", in, got, want)
		}
	}
}
