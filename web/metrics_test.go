package web

import (
	"bytes"
	"context"
	"log"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ncpos/ncpos/internal/metricstest"
	"github.com/ncpos/ncpos/ipc/health"
)

func scrape(t *testing.T, f *fixture) map[string]*dto.MetricFamily {
	t.Helper()
	r := f.do(newRequest("GET", "/metrics", "", nil))
	if r.Code != 200 {
		t.Fatalf("/metrics = %d: %s", r.Code, r.Body)
	}
	fams, err := metricstest.Parse(strings.NewReader(r.Body))
	if err != nil {
		t.Fatalf("/metrics: %v\n%s", err, r.Body)
	}
	return fams
}

// value finds the sample of name whose labels include all of want.
var value = metricstest.Value

func TestMetrics(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.traffic(4, time.Second, map[string]uint64{"LAN1": 1000, "LAN3": 500}, 100)
	fams := scrape(t, f)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
		typ    dto.MetricType
	}{
		{"ncpos_build_info", []string{"build_id", "test-build-7", "kernel", "6.12.0-ncpos"}, 1, dto.MetricType_GAUGE},
		{"ncpos_boot_time_seconds", nil, fixtureBoot, dto.MetricType_GAUGE},
		{"ncpos_port_receive_packets_total", []string{"port", "LAN1"}, 4000, dto.MetricType_COUNTER},
		{"ncpos_port_receive_bytes_total", []string{"port", "LAN1"}, 400000, dto.MetricType_COUNTER},
		{"ncpos_port_transmit_packets_total", []string{"port", "LAN1"}, 3960, dto.MetricType_COUNTER},
		{"ncpos_port_receive_drop_total", []string{"port", "LAN3"}, 20, dto.MetricType_COUNTER},
		{"ncpos_port_up", []string{"port", "LAN4"}, 0, dto.MetricType_GAUGE},
		{"ncpos_lldp_neighbor_info", []string{"port", "LAN1", "chassis_id", "52:54:00:12:34:56", "port_id", "eth1", "system_name", "sw-core-1", "management_address", "192.0.2.7"}, 1, dto.MetricType_GAUGE},
		{"ncpos_lldp_rejected_total", []string{"port", "LAN1"}, 2, dto.MetricType_COUNTER},
		{"ncpos_lldp_table_drops_total", []string{"port", "LAN1"}, 5, dto.MetricType_COUNTER},
		{"ncpos_port_up", []string{"port", "LAN1"}, 1, dto.MetricType_GAUGE},
		{"ncpos_port_speed_bytes", []string{"port", "LAN1"}, 10000 * 125000, dto.MetricType_GAUGE},
		{"ncpos_port_info", []string{"port", "LAN3", "interface", "eth3", "role", "data", "segment", "seg2"}, 1, dto.MetricType_GAUGE},
		{"ncpos_port_info", []string{"port", "MGMT", "role", "management", "segment", ""}, 1, dto.MetricType_GAUGE},
		{"ncpos_daemon_up", []string{"daemon", "bypassd"}, 1, dto.MetricType_GAUGE},
		{"ncpos_daemon_healthy", []string{"daemon", "statusd"}, 1, dto.MetricType_GAUGE},
		{"ncpos_segment_bypass_state", []string{"segment", "seg2", "state", "bypass"}, 1, dto.MetricType_GAUGE},
		{"ncpos_segment_bypass_state", []string{"segment", "seg2", "state", "normal"}, 0, dto.MetricType_GAUGE},
		{"ncpos_segment_bypass_state", []string{"segment", "seg1", "state", "normal"}, 1, dto.MetricType_GAUGE},
		{"ncpos_segment_bypass_override", []string{"segment", "seg1"}, 0, dto.MetricType_GAUGE},
		{"ncpos_cpu_seconds_total", []string{"cpu", "0", "mode", "user"}, float64((3723+4)*20) / 100, dto.MetricType_COUNTER},
		{"ncpos_memory_total_bytes", nil, 2048000 * 1024, dto.MetricType_GAUGE},
		{"ncpos_hwmon_temp_celsius", []string{"chip", "coretemp", "sensor", "Package id 0"}, 47, dto.MetricType_GAUGE},
		{"ncpos_hwmon_fan_rpm", []string{"chip", "nct6775", "sensor", "fan1"}, 2400, dto.MetricType_GAUGE},
		{"ncpos_config_rejected", nil, 0, dto.MetricType_GAUGE},
		// merged from the daemons' sockets
		{"ncpos_watchdog_pets_total", nil, 740, dto.MetricType_COUNTER},
		{"ncpos_watchdog_last_reset_info", []string{"kind", "watchdog"}, 1, dto.MetricType_GAUGE},
		{"ncpos_forwarder_live", nil, 1, dto.MetricType_GAUGE},
		{"ncpos_condition", []string{"kind", "link_down", "segment", "seg2", "port", "LAN4", "source", "forwarderd"}, 1, dto.MetricType_GAUGE},
		{"ncpos_forwarder_port_rx_packets_total", []string{"port", "LAN1"}, 61728, dto.MetricType_COUNTER},
		{"ncpos_bypass_transitions_total", []string{"pair", "pair2", "state", "bypass"}, 3, dto.MetricType_COUNTER},
	} {
		got, ok := value(fams, tc.name, tc.labels...)
		if !ok {
			t.Errorf("%s%v missing", tc.name, tc.labels)
			continue
		}
		if tc.name == "ncpos_cpu_seconds_total" {
			continue // depends on the fixture's clock; presence is enough
		}
		if got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
		if typ := fams[tc.name].GetType(); typ != tc.typ {
			t.Errorf("%s is a %v, want %v", tc.name, typ, tc.typ)
		}
	}
	// node_exporter's conventions: counters end in _total, nothing is
	// labelled per flow.
	for name, fam := range fams {
		if fam.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s does not end in _total", name)
		}
		if !strings.HasPrefix(name, "ncpos_") {
			t.Errorf("metric %s outside the ncpos_ namespace", name)
		}
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				switch l.GetName() {
				case "flow", "src", "dst", "src_ip", "dst_ip", "src_port", "dst_port":
					t.Errorf("%s has a per-flow label %s", name, l.GetName())
				}
			}
		}
	}
}

// TestMetricsDaemonsAbsent: a box with only statusd still serves metrics,
// with the missing daemons down.
func TestMetricsDaemonsAbsent(t *testing.T) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	fams := scrape(t, f)
	for _, d := range []string{"forwarderd", "bypassd", "watchdogd"} {
		if v, ok := value(fams, "ncpos_daemon_up", "daemon", d); !ok || v != 0 {
			t.Errorf("ncpos_daemon_up{daemon=%q} = %v, %v; want 0", d, v, ok)
		}
	}
	if _, ok := value(fams, "ncpos_segment_bypass_state"); ok {
		t.Error("bypass state exported without bypassd")
	}
	if _, ok := value(fams, "ncpos_port_receive_packets_total", "port", "LAN1"); !ok {
		t.Error("port counters missing")
	}
}

// TestMetricsDuplicates: a daemon exporting a name statusd owns with
// other help text is an error the gatherer catches and logs; the scrape
// still carries statusd's own series.
func TestMetricsDuplicates(t *testing.T) {
	f := newFixture(t, fixtureOpts{noDaemons: true})
	serveFake(t.Context(), t, f.run, "forwarderd", fakeForwarderStatus,
		"# HELP ncpos_port_up something else\n# TYPE ncpos_port_up gauge\nncpos_port_up{port=\"LAN1\"} 0\n")
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	fams := scrape(t, f)
	if v, ok := value(fams, "ncpos_port_up", "port", "LAN1"); !ok || v != 1 {
		t.Fatalf("statusd's ncpos_port_up{LAN1} = %v, %v; want 1", v, ok)
	}
	if !strings.Contains(logged.String(), "ncpos_port_up") {
		t.Errorf("the clash of ncpos_port_up is not logged: %q", logged.String())
	}
}

// TestRevertOwedShown: a configuration revert the box owes, as the change
// manager tells the monitor of it, is a condition of the snapshot, a problem of the
// summary (degraded) and a sample of ncpos_condition, and its end is an
// event.
func TestRevertOwedShown(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c := health.Condition{Kind: health.ConfigRevertOwed, Source: "statusd", Since: f.clock(),
		Detail: "configuration version 2 is being undone: going back to version 1 failed (forwarderd: device busy)"}
	f.mon.Tell("configuration", []health.Condition{c})
	snap := f.mon.Step(context.Background())
	if !slices.ContainsFunc(snap.Conditions, func(got health.Condition) bool { return got.Kind == health.ConfigRevertOwed }) ||
		!slices.ContainsFunc(snap.Summary.Problems, func(p string) bool { return strings.Contains(p, "device busy") }) || snap.Summary.State == "ok" {
		t.Errorf("an owed revert: conditions %+v, summary %+v", snap.Conditions, snap.Summary)
	}
	if v, ok := value(scrape(t, f), "ncpos_condition", "kind", "config_revert_owed", "class", "box", "source", "statusd"); !ok || v != 1 {
		t.Errorf("ncpos_condition of the owed revert: %v, %v", v, ok)
	}
	f.mon.Tell("configuration", nil)
	f.mon.Step(context.Background())
	if !hasEvent(f.events.Recent(0), "condition", "ended: config_revert_owed") {
		t.Errorf("no event says the owed revert ended: %+v", f.events.Recent(5))
	}
}
