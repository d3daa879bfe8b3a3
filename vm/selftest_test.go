package vm

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/internal/browsertest"
	"github.com/ncpos/ncpos/web/api"
)

// selfTestConfig patches the spare LAN3 and LAN4 into seg1's LAN1 and
// LAN2. The expectations are those of a box in software emulation, which
// forwards thousands of frames per second, not millions: every size must
// reach 1 % of a 100 Mb/s line, and 64 B the whole line, which no
// emulated box reaches, so that the run shows a size falling short
// (FAILED, or INCONCLUSIVE where the emulated test port could not offer
// the rate either). Both directions go at once, each test port sending
// one stream and receiving the other. Two latency trials per size keep
// the run short.
const selfTestConfig = `platform = "qemu"
hostname = "ncpos-selftest"
services = ["forwarderd", "bypassd", "watchdogd", "statusd"]

[watchdog]
boot_grace = "3600s"

# The headless browser loads the dashboard without signing in.
[status]
auth_read = false

[[segment]]
name = "seg1"
ports = ["LAN1", "LAN2"]
bypass = "pair1"

[selftest]
ports = [{test = "LAN3", segment_port = "LAN1"}, {test = "LAN4", segment_port = "LAN2"}]
sizes = [64, 1518]
trial = "1s"
line_rate = "100M"
expect = { "*" = "1%", "64" = "100%" }
latency_trials = 2
directions = 2
`

// TestSelfTestThroughCables boots an image whose test ports are cabled
// to its segment ports as its [selftest] says, runs the RFC 2544
// self-test through the authenticated API, and checks the report: one row
// per size for seg1 in each direction, both measured at once, each with
// the verdict its figure and expectation give, and the dashboard's table
// and chart.
func TestSelfTestThroughCables(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	// Registered first, run last: after the serial console's tail, the
	// rows a failure is about.
	var rows []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("self-test rows: %s", strings.Join(rows, "; "))
		}
	})
	img := testImage(t, "selftest", []byte(selfTestConfig))
	v, _ := boot(t, img, false, func(o *Options) {
		o.Cables = []Cable{{A: 3, B: 1}, {A: 4, B: 2}}
	})
	// The segment must forward before its throughput means anything.
	deadline := time.Now().Add(v.Within(3 * time.Minute))
	for s := snapshot(t, v); !forwardingNormally(s, "seg1"); s = snapshot(t, v) {
		if time.Now().After(deadline) {
			t.Fatalf("seg1 not forwarding normally: %+v", segmentOf(s, "seg1"))
		}
		time.Sleep(time.Second)
	}

	// Refused up front: a size out of range, and no password.
	if code, body := control(t, v, "/api/v1/control/selftest", "ncpos", testPassword, `{"sizes":[64, 20000]}`); code != 400 {
		t.Errorf("size 20000: %d %s, want 400", code, body)
	}
	if code, _ := control(t, v, "/api/v1/control/selftest", "", "", `{}`); code != 401 {
		t.Errorf("self-test without a password: %d, want 401", code)
	}
	start := time.Now()
	if code, body := control(t, v, "/api/v1/control/selftest", "ncpos", testPassword, `{}`); code != 202 {
		t.Fatalf("start self-test: %d %s", code, body)
	}
	if code, _ := control(t, v, "/api/v1/control/selftest", "ncpos", testPassword, `{}`); code != 409 {
		t.Errorf("second self-test while one runs: %d, want 409", code)
	}
	var job struct {
		Job api.SelfTestJob `json:"job"`
	}
	for {
		getJSON(t, v, "api/v1/selftest/job", &job)
		if job.Job.State != "running" {
			break
		}
		if time.Since(start) > 10*time.Minute {
			t.Fatalf("self-test still running after %v: %+v", time.Since(start).Round(time.Second), job.Job)
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("self-test through the cables: %v, job %s: %s %s", time.Since(start).Round(time.Second), job.Job.State, job.Job.Result, job.Job.Error)

	var got struct {
		SelfTest *api.SelfTest `json:"self_test"`
	}
	getJSON(t, v, "api/v1/selftest", &got)
	st := got.SelfTest
	if st == nil || len(st.Results) != 4 {
		t.Fatalf("self-test report %+v, want two sizes of seg1 in two directions", st)
	}
	directions := map[string]int{}
	for _, r := range st.Results {
		t.Logf("%s (%s) %4d B: %.0f frames/s (%.1f Mb/s), loss %.3f %%, expected %.0f (%s): %s %s",
			r.Segment, r.Direction, r.FrameSize, r.ThroughputPPS, r.ThroughputMbps, r.LossPercent, r.ExpectedPPS, r.Expected, r.Verdict, r.Note)
		rows = append(rows, fmt.Sprintf("%s %d B %.0f fps of %.0f %s, latency %.1f µs over %d trials", r.Direction, r.FrameSize, r.ThroughputPPS, r.ExpectedPPS, r.Verdict, r.LatencyRFC2544US, r.LatencyTrials))
		directions[r.Direction]++
		if r.Segment != "seg1" || (r.Direction != "LAN1 → LAN2" && r.Direction != "LAN2 → LAN1") {
			t.Errorf("row %+v, want seg1 LAN1 → LAN2 or LAN2 → LAN1", r)
		}
		t.Logf("%4d B latency: %.1f µs (RFC 2544, %d trials); min %.1f / mean %.1f / p99 %.1f / max %.1f µs",
			r.FrameSize, r.LatencyRFC2544US, r.LatencyTrials, r.LatencyMinUS, r.LatencyUS, r.LatencyP99US, r.LatencyMaxUS)
		// Latency is measured at the throughput rate (§26.2): none where
		// every trial lost frames, as a starved emulated box may at 64 B.
		switch {
		case r.ThroughputPPS == 0 && r.LatencyTrials != 0:
			t.Errorf("%d B: no throughput, yet latency over %d trials", r.FrameSize, r.LatencyTrials)
		case r.ThroughputPPS > 0 && (r.LatencyTrials != 2 || r.LatencyRFC2544US <= 0 || r.LatencyMinUS > r.LatencyUS || r.LatencyUS > r.LatencyMaxUS):
			t.Errorf("%d B: latency %.1f µs over %d trials, min %.1f mean %.1f max %.1f: want RFC 2544's over 2 trials", r.FrameSize,
				r.LatencyRFC2544US, r.LatencyTrials, r.LatencyMinUS, r.LatencyUS, r.LatencyMaxUS)
		}
		want := api.VerdictFailed
		if r.ThroughputPPS >= r.ExpectedPPS {
			want = api.VerdictPassed
		}
		if r.Verdict != want && !(want == api.VerdictFailed && r.Verdict == api.VerdictInconclusive) {
			t.Errorf("%d B: %s, but %.0f frames/s against %.0f expected", r.FrameSize, r.Verdict, r.ThroughputPPS, r.ExpectedPPS)
		}
		switch r.FrameSize {
		case 64:
			if r.Verdict == api.VerdictPassed || r.ExpectedPPS < 148000 {
				t.Errorf("64 B %s against %.0f frames/s: an emulated box does not forward 100 Mb/s of 64-byte frames", r.Verdict, r.ExpectedPPS)
			}
		case 1518:
			if r.Verdict != api.VerdictPassed || r.ThroughputPPS <= 0 {
				t.Errorf("1518 B: %s at %.0f frames/s, want at least 1 %% of 100 Mb/s (%.0f)", r.Verdict, r.ThroughputPPS, r.ExpectedPPS)
			}
		}
	}
	// The job says the report's verdict: INCONCLUSIVE where only the
	// tester's generator fell short, so nobody reads it as a bad box.
	if !strings.HasPrefix(job.Job.Result, st.Verdict+": ") {
		t.Errorf("job result %q, want it to start with the report's verdict %s", job.Job.Result, st.Verdict)
	}
	if directions["LAN1 → LAN2"] != 2 || directions["LAN2 → LAN1"] != 2 {
		t.Errorf("rows per direction %v, want both sizes in each", directions)
	}
	if st.Passed || job.Job.State != "failed" || !strings.Contains(st.Summary, "seg1 LAN1 → LAN2 64 B") || !strings.Contains(st.Summary, "seg1 LAN2 → LAN1 64 B") {
		t.Errorf("a run with 64 B short of its expectation: passed %v, job %s, summary %q", st.Passed, job.Job.State, st.Summary)
	}

	cert := boxCertificate(t, v)
	spki, err := boxtls.SPKIBase64(cert.Raw)
	if err != nil {
		t.Fatal(err)
	}
	b := browsertest.Start(t, browsertest.Options{TrustSPKI: spki})
	dom, err := b.Load(v.StatusURL(), `polled >= 1 && document.querySelectorAll('#selftest tr[data-segment="seg1"]').length == 4`, 4*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`data-field="selftest-chart"`, `data-line="seg1 LAN1 → LAN2"`, `data-line="seg1 LAN2 → LAN1"`, `data-size="64"`, `data-size="1518"`, `data-field="latency"`}
	for _, r := range st.Results {
		want = append(want, fmt.Sprintf(">%s</td>", r.Verdict))
	}
	for _, want := range want {
		if !strings.Contains(dom, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
	shot := filepath.Join(artifacts(t), "vm-selftest.png")
	n, err := b.Screenshot(shot, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the self-test on the VM's dashboard: %s (%d bytes)", shot, n)
}
