package web

import (
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ncpos/ncpos/monitoring"
	"github.com/ncpos/ncpos/watchdog"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

type okPinger struct{}

func (okPinger) Ping() error                      { return nil }
func (okPinger) TimeLeft() (time.Duration, error) { return 20 * time.Second, nil }

// TestMonitoringMetricsExist: every ncpos_ metric that the alerting rules
// and the Grafana dashboard use is one that an appliance exports: statusd
// itself, watchdogd's collector, or forwarderd (names read from
// forwarder/metrics.go when that package is in the tree). A renamed
// metric must not silently disable an alert.
func TestMonitoringMetricsExist(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.traffic(2, time.Second, nil, 0)
	f.write("perm/selftest.json", `{"finished":"2026-11-30T12:10:00Z","passed":true}`)
	f.traffic(1, time.Second, nil, 0)
	have := map[string]bool{}
	for name := range scrape(t, f) {
		have[name] = true
	}
	// What statusd exports only on some boxes (the clock: only with NTP
	// servers, TestTimeShown).
	for _, name := range []string{"ncpos_syslog_messages_sent_total", "ncpos_syslog_messages_dropped_total",
		"ncpos_boot_disk_written_bytes_total", "ncpos_boot_disk_writes_total", "ncpos_time_synced"} {
		have[name] = true
	}
	sup := watchdog.NewSupervisor(okPinger{}, &watchdog.Gate{Timeout: time.Second}, watchdog.Records{Dir: t.TempDir()}, time.Second,
		watchdogapi.Status{LastReset: watchdogapi.LastReset{Kind: "power-on"}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(watchdog.Collector{S: sup})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	src, err := os.ReadFile("../forwarder/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"(ncpos_forwarder_[a-z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		have[m[1]] = true
	}

	used := regexp.MustCompile(`ncpos_[a-z0-9_]+`)
	for file, text := range map[string][]byte{"rules.yml": monitoring.Rules, "grafana-dashboard.json": monitoring.GrafanaDashboard} {
		for _, name := range used.FindAllString(string(text), -1) {
			switch {
			case have[name]:
			default:
				t.Errorf("%s uses %s, which no ncpos daemon exports", file, name)
			}
		}
	}
}
