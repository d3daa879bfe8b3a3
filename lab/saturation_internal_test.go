package lab

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/bench"
)

func TestOverloadPoint(t *testing.T) {
	curve := []LoadPoint{{1, 1}, {2, 1.9}, {3, 2}, {4.1, 1.8}, {5.5, 1.5}, {8, 1}}
	// Max 2: 150 % is 3, offered 2.8 or more counts; 3 itself is there.
	if p := overloadPoint(curve, 2); p != (LoadPoint{3, 2}) {
		t.Errorf("max 2: %+v, want the point offered 3", p)
	}
	// Max 2.5: nothing at 3.75; of those offered 3.5 or more, 4.1 is nearest.
	if p := overloadPoint(curve, 2.5); p != (LoadPoint{4.1, 1.8}) {
		t.Errorf("max 2.5: %+v, want the point offered 4.1", p)
	}
	// Max 6: nothing offered 8.4 or more: the most offered.
	if p := overloadPoint(curve, 6); p != (LoadPoint{8, 1}) {
		t.Errorf("max 6: %+v, want the point offered 8", p)
	}
	s := &Saturation{Max: 2, Curve: curve}
	if worst, n := s.beyond(1.5); worst != 1 || n != 4 {
		t.Errorf("beyond 150 %%: %v over %d points, want 1 over 4", worst, n)
	}
}

func TestReportVerdicts(t *testing.T) {
	r := &BenchReport{CPUs: 2, Rounds: 1, Rows: []BenchRow{
		{Setup: SetupCeiling, Size: 64, PPS: 8e6, Sink: SinkXDP},
		{Setup: SetupBridge, Size: 64, PPS: 1.2e6, Sink: SinkXDP},
		{Setup: SetupReference, Size: 64, PPS: 5e6, Sink: SinkXDP},
		{Setup: SetupXDPForward, Size: 64, PPS: 4.8e6, Sink: SinkXDP},
		{Setup: SetupAFXDP, Size: 64, PPS: 0.9e6, Sink: SinkTC},
	}, Overload: []*Saturation{
		{Setup: SetupXDPForward, Size: 64, Max: 5e6, Offered: 6e6, Forwarded: 5e6},   // 120 %: not offered
		{Setup: SetupReference, Size: 64, Max: 5e6, Offered: 7.5e6, Forwarded: 4e6},  // 80 %
		{Setup: SetupAFXDP, Size: 64, Max: 1.2e6, Offered: 1.8e6, Forwarded: 1.19e6}, // kept
	}}
	var b bytes.Buffer
	r.Print(&b)
	out := b.String()
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"xdp forward / devmap reference            0.96x (want >= 1.00x) NOT met",
		"xdp forward / Linux bridge                4.00x (want >= 4.00x) met",
		"xdp service 1 flow / xdp forward             - (want >= 0.90x) not measured",
		"afxdp forward / xdp forward               0.19x (want >= 0.30x) NOT met",
		"ncpos xdp forward, overload / max         1.00x (want >= the reference's 0.80x at 150 % offered) not offered (120 % at most)",
		"ncpos afxdp forward, overload / max       0.99x (want >= the reference's 0.80x at 150 % offered) met",
	} {
		if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(flat, "ncpos afxdp forward 0.90 1111.1 +986.1 0.75x 0.18x tc") {
		t.Errorf("report lacks the afxdp row with its tc sink:\n%s", out)
	}
	if strings.Contains(flat, "devmap redirect reference, overload / max 0.80x (want") {
		t.Errorf("the reference is judged against itself:\n%s", out)
	}

	// A datapath that keeps less than the reference misses; one the
	// reference has nothing to compare with is not judged.
	r.Overload = []*Saturation{
		{Setup: SetupXDPForward, Size: 64, Max: 5e6, Offered: 7.5e6, Forwarded: 3.5e6},
		{Setup: SetupReference, Size: 64, Max: 5e6, Offered: 7.5e6, Forwarded: 4e6},
	}
	b.Reset()
	r.Print(&b)
	flat = strings.Join(strings.Fields(b.String()), " ")
	if want := "ncpos xdp forward, overload / max 0.70x (want >= the reference's 0.80x at 150 % offered) NOT met"; !strings.Contains(flat, want) {
		t.Errorf("report lacks %q:\n%s", want, b.String())
	}
	r.Overload = r.Overload[:1]
	b.Reset()
	r.Print(&b)
	if !strings.Contains(b.String(), "(want >= the reference's - at 150 % offered) not compared: no reference curve") {
		t.Errorf("a datapath without the reference's curve was judged:\n%s", b.String())
	}
}

func TestBenchOptionsWants(t *testing.T) {
	all := BenchOptions{}
	some := BenchOptions{Only: []string{"afxdp", "overload"}}
	for _, s := range Setups {
		if !all.Wants(s) {
			t.Errorf("no -only: %q not measured", s)
		}
		want := s == SetupAFXDP || s == SetupOverload
		if some.Wants(s) != want {
			t.Errorf("-only afxdp,overload: Wants(%q) = %v", s, !want)
		}
	}
}

// TestReportRFC2544Agreement: the search is compared with the bench's
// capacity, unless it stopped at a bound below that capacity.
func TestReportRFC2544Agreement(t *testing.T) {
	for _, c := range []struct {
		got, max float64
		want     string
	}{
		{4.2e6, 4.5e6, "the two methods agree within 5 % (-4.5 %)"},
		{3.9e6, 4.5e6, "the two methods do NOT agree within 5 % (-11.4 %)"},
		{1.488e6, 1.488095e6, "the two methods not compared: the search went no higher than 1.49 Mpps, its bound (1 GbE's line rate without the ceiling's row)"},
		{1.2e6, 1.488095e6, "the two methods do NOT agree within 5 % (-72.7 %)"},
	} {
		r := &BenchReport{CPUs: 2, Rounds: 1, Rows: []BenchRow{{Setup: SetupXDPForward, Size: 64, PPS: 4.4e6, Sink: SinkXDP}},
			RFC2544: &RFC2544Figure{Size: 64, LineBPS: 10e9, MaxPPS: c.max, Searches: []float64{c.got},
				Result: &bench.SizeResult{ThroughputPPS: c.got}}}
		var b bytes.Buffer
		r.Print(&b)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("search %.0f of at most %.0f: report lacks %q:\n%s", c.got, c.max, c.want, b.String())
		}
	}
}
