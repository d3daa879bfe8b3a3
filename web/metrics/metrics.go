// Package metrics serves statusd's /metrics: its own metrics of the box
// (build, ports, daemons, segments and their relays, conditions, the
// host) with the metrics of every daemon, fetched from its socket at
// scrape time.
package metrics

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/snmp"
)

// Sources are what /metrics reads at each scrape.
type Sources struct {
	Monitor *monitor.Monitor
	Logs    *logs.Collector // nil: none
	// Outputs are the syslog sender, the SNMP agent and its notifier,
	// each nil when off.
	Outputs func() (*events.Sender, *snmp.Agent, *snmp.Notifier)
	// Guards counts what statusd's limits refused.
	Guards func() Guards
}

// Guards are the counts of statusd's limits.
type Guards struct {
	LoginFailures, LoginThrottled                  uint64
	Rate, Host, Connections, Evicted, TLSHandshake uint64
}

// Handler serves /metrics: statusd's own metrics and the metrics of
// every daemon. prometheus.Gatherers merges them and reports a name that
// two sources define differently.
func Handler(s Sources) http.Handler {
	own := prometheus.NewRegistry()
	own.MustRegister(ownCollector{s})
	g := prometheus.Gatherers{own}
	for _, d := range monitor.KnownDaemons {
		if d != "statusd" {
			g = append(g, daemonGatherer{runDir: s.Monitor.Collector.RunDir, daemon: d})
		}
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      log.New(log.Writer(), "statusd: metrics: ", 0),
	})
}

// daemonGatherer parses one daemon's /metrics. An absent daemon gives
// nothing (ncpos_daemon_up says it is down).
type daemonGatherer struct {
	runDir, daemon string
}

func (d daemonGatherer) Gather() ([]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	text, err := ipc.NewClient(d.runDir, d.daemon, 2*time.Second).Metrics(ctx)
	if err != nil {
		if ipc.NotRunning(err) {
			return nil, nil
		}
		return nil, err
	}
	return parseMetrics(d.daemon, text)
}

// parseMetrics reads the text format into metric families.
func parseMetrics(daemon string, text []byte) ([]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("%s /metrics: %w", daemon, err)
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, f := range fams {
		out = append(out, f)
	}
	return out, nil
}

// ownCollector turns the latest snapshot into metrics, named as
// node_exporter names their counterparts (node_network_* becomes
// ncpos_port_*), units in the names, labels only for things that are few
// (ports, segments, daemons, CPUs, sensors), never per flow.
type ownCollector struct{ s Sources }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	mBuildInfo     = desc("ncpos_build_info", "Build and kernel of the running image; always 1.", "build_id", "kernel", "goversion")
	mBootTime      = desc("ncpos_boot_time_seconds", "When the appliance booted, seconds since the epoch (changes when it reboots).")
	mDaemonUp      = desc("ncpos_daemon_up", "1 when the daemon answers on its socket.", "daemon")
	mDaemonHealthy = desc("ncpos_daemon_healthy", "1 when the daemon is live (answers /livez, its loop and engine work).", "daemon")
	mCondition     = desc("ncpos_condition", "1 for each segment or box condition that holds (never a reason to reset).", "kind", "class", "segment", "port", "pair", "source")
	mSNMPPackets   = desc("ncpos_snmp_packets_total", "SNMP datagrams the agent received, by what became of them (answered counts answers sent).", "outcome")
	mSNMPEngine    = desc("ncpos_snmp_engine_info", "The SNMP agent's engine ID, which SNMPv3 trap receivers need; always 1.", "engine_id")
	mSNMPTraps     = desc("ncpos_snmp_notifications_total", "SNMP notifications, per receiver sent, failed, or dropped from a full queue.", "outcome")
	mConfigReject  = desc("ncpos_config_rejected", "Configuration files rejected at boot (the previous configuration is in force).")

	mPortInfo     = desc("ncpos_port_info", "Front-panel port to interface mapping; always 1.", "port", "interface", "role", "segment")
	mPortUp       = desc("ncpos_port_up", "1 when the port's link is up (operstate).", "port")
	mLLDPNeighbor = desc("ncpos_lldp_neighbor_info", "An LLDP neighbour a segment port hears, until its TTL runs out; always 1.",
		"port", "chassis_id", "port_id", "system_name", "management_address")
	mLLDPRejected = desc("ncpos_lldp_rejected_total", "LLDP frames a segment port received and could not read (forwarded all the same).", "port")
	mLLDPDropped  = desc("ncpos_lldp_table_drops_total", "New LLDP neighbours a segment port's full table dropped (LLDP-MIB's lldpStatsRemTablesDrops).", "port")
	mPortSpeed    = desc("ncpos_port_speed_bytes", "Link speed in bytes per second.", "port")
	mRxPackets    = desc("ncpos_port_receive_packets_total", "Packets the port received (kernel counter).", "port")
	mTxPackets    = desc("ncpos_port_transmit_packets_total", "Packets the port sent (kernel counter).", "port")
	mRxBytes      = desc("ncpos_port_receive_bytes_total", "Bytes the port received.", "port")
	mTxBytes      = desc("ncpos_port_transmit_bytes_total", "Bytes the port sent.", "port")
	mRxDrop       = desc("ncpos_port_receive_drop_total", "Received packets the kernel or NIC dropped.", "port")
	mTxDrop       = desc("ncpos_port_transmit_drop_total", "Packets dropped on transmit.", "port")
	mRxErrs       = desc("ncpos_port_receive_errs_total", "Receive errors.", "port")
	mTxErrs       = desc("ncpos_port_transmit_errs_total", "Transmit errors.", "port")
	mCarrier      = desc("ncpos_port_carrier_changes_total", "Link state changes (flapping).", "port")
	mBypassState  = desc("ncpos_segment_bypass_state", "1 for the bypass relay state the segment is in (normal, bypass, disconnect).", "segment", "state")
	mBypassManual = desc("ncpos_segment_bypass_override", "1 while a manual bypass override is in force.", "segment")

	mCPUSeconds = desc("ncpos_cpu_seconds_total", "Seconds each CPU spent in each mode.", "cpu", "mode")
	mLoad1      = desc("ncpos_load1", "1-minute load average.")
	mLoad5      = desc("ncpos_load5", "5-minute load average.")
	mLoad15     = desc("ncpos_load15", "15-minute load average.")
	mMemTotal   = desc("ncpos_memory_total_bytes", "Memory in total.")
	mMemAvail   = desc("ncpos_memory_available_bytes", "Memory available for new work.")
	mTemp       = desc("ncpos_hwmon_temp_celsius", "Temperature from hwmon.", "chip", "sensor")
	mTempCrit   = desc("ncpos_hwmon_temp_crit_celsius", "Critical temperature from hwmon.", "chip", "sensor")
	mFan        = desc("ncpos_hwmon_fan_rpm", "Fan speed from hwmon.", "chip", "sensor")
	mDiskBytes  = desc("ncpos_boot_disk_written_bytes_total", "Bytes written to the boot disk since boot (flash wear).")
	mDiskWrites = desc("ncpos_boot_disk_writes_total", "Write requests to the boot disk since boot.")

	mTimeSynced       = desc("ncpos_time_synced", "1 while the clock is synced with an NTP server.")
	mTimexSync        = desc("node_timex_sync_status", "Is clock synchronized to a reliable server (1 = yes, 0 = no), as node_exporter's timex collector says it.")
	mTimeOffset       = desc("ncpos_time_offset_seconds", "The clock's offset from its server at the last sync, before it was corrected (server minus box).")
	mTimeRootDistance = desc("ncpos_time_root_distance_seconds", "The bound of the synced server's error at the last sync.")
	mTimeLastSync     = desc("ncpos_time_last_sync_timestamp_seconds", "When the clock last synced with an NTP server.")

	mSelfTestPassed = desc("ncpos_selftest_passed", "1 when the latest self-test passed.")
	mSelfTestTime   = desc("ncpos_selftest_finished_timestamp_seconds", "When the latest self-test finished.")
	mSyslogSent     = desc("ncpos_syslog_messages_sent_total", "Events and log lines sent to remote syslog.")
	mLogLines       = desc("ncpos_log_lines_total", "Log lines statusd received from each daemon since it started.", "daemon")
	mLogMissed      = desc("ncpos_log_lines_missed_total", "Log lines a daemon could not hand to statusd (it was not running or not reading).", "daemon")
	mLogMalformed   = desc("ncpos_log_datagrams_malformed_total", "Datagrams on the log socket that were not a log line.")
	mLogRefused     = desc("ncpos_log_lines_refused_total", "Log lines refused because too many daemons log.")
	mLoginFailures  = desc("ncpos_status_login_failures_total", "Logins to the management API with a wrong user or password.")
	mLoginThrottled = desc("ncpos_status_login_throttled_total", "Logins refused unchecked while their client waits out its backoff after failures.")
	mRefused        = desc("ncpos_status_refused_total", "Requests and connections the management API refused to protect itself.", "reason")
	mSyslogDropped  = desc("ncpos_syslog_messages_dropped_total", "Events and log lines that could not be sent to remote syslog (the queue was full while the collector was unreachable).")
)

// Describe sends nothing: the collector is unchecked, its label values
// follow the appliance's ports and sensors.
func (ownCollector) Describe(chan<- *prometheus.Desc) {}

// userHZ is the unit of /proc/stat (USER_HZ is 100 on every Linux ABI).
const userHZ = 100

func (c ownCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap, cpus := c.s.Monitor.LatestCPU(ctx)
	sys := snap.System
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}

	gauge(mBuildInfo, 1, sys.BuildID, sys.KernelRelease(), runtime.Version())
	if !snap.Host.BootTime.IsZero() {
		gauge(mBootTime, float64(snap.Host.BootTime.Unix()))
	}
	rejected := 0
	for _, d := range sys.Daemons {
		if !d.Configured && d.Name != "statusd" && d.State == api.DaemonNotConfigured {
			continue
		}
		gauge(mDaemonUp, b2f(d.State == api.DaemonHealthy || d.State == api.DaemonUnhealthy), d.Name)
		gauge(mDaemonHealthy, b2f(d.Healthy), d.Name)
	}
	for _, cd := range snap.Conditions {
		class, _ := cd.Kind.Class()
		gauge(mCondition, 1, string(cd.Kind), class.String(), cd.Segment, cd.Port, cd.Pair, cd.Source)
	}
	if rec := sys.ConfigRejected; rec != nil {
		rejected = len(rec)
	}
	gauge(mConfigReject, float64(rejected))
	syslog, agent, notifier := c.s.Outputs()
	if a := agent; a != nil {
		gauge(mSNMPEngine, 1, hex.EncodeToString(a.EngineID()))
		for outcome, n := range a.Stats.Counters() {
			counter(mSNMPPackets, n, outcome)
		}
	}
	if n := notifier; n != nil {
		counter(mSNMPTraps, n.Sent.Load(), "sent")
		counter(mSNMPTraps, n.Failed.Load(), "failed")
		counter(mSNMPTraps, n.Dropped.Load(), "dropped")
	}

	for _, p := range snap.Ports {
		gauge(mPortInfo, 1, p.Name, p.Interface, p.Role, p.Segment)
		gauge(mPortUp, b2f(p.Up), p.Name)
		if l := p.LLDP; l != nil {
			for _, n := range l.Neighbors {
				// What the network sent, cut short: a label is no place
				// for a kilobyte.
				gauge(mLLDPNeighbor, 1, p.Name, clip(n.ChassisID), clip(n.PortID), clip(n.SystemName), clip(n.ManagementAddress))
			}
			counter(mLLDPRejected, l.Rejected, p.Name)
			counter(mLLDPDropped, l.Dropped, p.Name)
		}
		if p.SpeedMbps > 0 {
			gauge(mPortSpeed, float64(p.SpeedMbps)*125000, p.Name)
		}
		if p.Error != "" {
			continue
		}
		k := p.Counters
		counter(mRxPackets, k.RxPackets, p.Name)
		counter(mTxPackets, k.TxPackets, p.Name)
		counter(mRxBytes, k.RxBytes, p.Name)
		counter(mTxBytes, k.TxBytes, p.Name)
		counter(mRxDrop, k.RxDropped, p.Name)
		counter(mTxDrop, k.TxDropped, p.Name)
		counter(mRxErrs, k.RxErrors, p.Name)
		counter(mTxErrs, k.TxErrors, p.Name)
		counter(mCarrier, k.CarrierChanges, p.Name)
	}
	for _, seg := range snap.Segments {
		if seg.Bypass == nil {
			continue
		}
		for _, st := range []string{"normal", "bypass", "disconnect"} {
			gauge(mBypassState, b2f(seg.Bypass.State == st), seg.Name, st)
		}
		gauge(mBypassManual, b2f(seg.Bypass.Override != nil), seg.Name)
	}

	for _, cpu := range cpus {
		for mode, ticks := range cpu.Modes {
			ch <- prometheus.MustNewConstMetric(mCPUSeconds, prometheus.CounterValue, float64(ticks)/userHZ, fmt.Sprint(cpu.CPU), mode)
		}
	}
	gauge(mLoad1, snap.Host.Load[0])
	gauge(mLoad5, snap.Host.Load[1])
	gauge(mLoad15, snap.Host.Load[2])
	if snap.Host.Memory.TotalBytes > 0 {
		gauge(mMemTotal, float64(snap.Host.Memory.TotalBytes))
		gauge(mMemAvail, float64(snap.Host.Memory.AvailableBytes))
	}
	seen := map[string]bool{} // hwmon labels can repeat on odd boards
	for _, sn := range snap.Host.Sensors {
		key := sn.Kind + "\x00" + sn.Chip + "\x00" + sn.Label
		if seen[key] {
			continue
		}
		seen[key] = true
		if sn.Kind == "fan" {
			gauge(mFan, sn.Value, sn.Chip, sn.Label)
			continue
		}
		gauge(mTemp, sn.Value, sn.Chip, sn.Label)
		if sn.Crit > 0 {
			gauge(mTempCrit, sn.Crit, sn.Chip, sn.Label)
		}
	}
	if d := sys.BootDisk; d != nil {
		counter(mDiskBytes, d.BytesWritten)
		counter(mDiskWrites, d.Writes)
	}
	if t := sys.Time; t != nil && len(t.Servers) > 0 {
		gauge(mTimeSynced, b2f(t.Synced))
		gauge(mTimexSync, b2f(t.Synced))
		if !t.LastSync.IsZero() {
			gauge(mTimeOffset, t.OffsetSeconds)
			gauge(mTimeRootDistance, t.RootDistanceSeconds)
			gauge(mTimeLastSync, float64(t.LastSync.UnixNano())/1e9)
		}
	}
	if t := snap.SelfTest; t != nil {
		gauge(mSelfTestPassed, b2f(t.Passed))
		gauge(mSelfTestTime, float64(t.Finished.Unix()))
	}
	if syslog != nil {
		sent, dropped := syslog.Stats()
		counter(mSyslogSent, sent)
		counter(mSyslogDropped, dropped)
	}
	if c.s.Logs != nil {
		for _, d := range c.s.Logs.Daemons(0) {
			counter(mLogLines, d.Total, d.Daemon)
			counter(mLogMissed, d.Missed, d.Daemon)
		}
		_, malformed, refused := c.s.Logs.Stats()
		counter(mLogMalformed, malformed)
		counter(mLogRefused, refused)
	}
	g := c.s.Guards()
	counter(mLoginFailures, g.LoginFailures)
	counter(mLoginThrottled, g.LoginThrottled)
	counter(mRefused, g.Rate, "rate")
	counter(mRefused, g.Host, "host")
	counter(mRefused, g.Connections, "connections")
	counter(mRefused, g.Evicted, "evicted")
	counter(mRefused, g.TLSHandshake, "tls")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// clip cuts a label value from the network to 64 bytes, dropping a rune
// the cut splits.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return strings.ToValidUTF8(s[:64], "")
}
