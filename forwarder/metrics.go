package forwarder

import (
	"net/http"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsHandler serves forwarderd's /metrics through client_golang, as
// every other daemon does: counters per port and segment (with reason
// labels), the flow table, and health, from Status at scrape time.
func (f *Forwarder) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(statusCollector{f.Status})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	portLabels = []string{"port", "interface", "segment"}

	mLive          = desc("ncpos_forwarder_live", "1 while the forwarder is live (loop, maps, engine, programs)")
	mCondition     = desc("ncpos_forwarder_condition", "1 for each condition that holds, by kind, segment and port", "kind", "segment", "port")
	mHeartbeatAge  = desc("ncpos_forwarder_heartbeat_age_seconds", "time since the forwarder's last heartbeat")
	mForwardCores  = desc("ncpos_forwarder_forwarding_cores", "CPUs that forward")
	mPortRx        = desc("ncpos_forwarder_port_rx_packets_total", "frames that entered the datapath on the port", portLabels...)
	mPortRxBytes   = desc("ncpos_forwarder_port_rx_bytes_total", "bytes that entered the datapath on the port", portLabels...)
	mPortPassed    = desc("ncpos_forwarder_port_passed_total", "frames handed on towards the peer", portLabels...)
	mPortTx        = desc("ncpos_forwarder_port_tx_packets_total", "frames that left through the port", portLabels...)
	mPortTxBytes   = desc("ncpos_forwarder_port_tx_bytes_total", "bytes that left through the port", portLabels...)
	mPortDrops     = desc("ncpos_forwarder_port_drops_total", "frames dropped, by reason", append(portLabels, "reason")...)
	mPortMalformed = desc("ncpos_forwarder_port_malformed_frames_total", "malformed frames (forwarded all the same)", portLabels...)
	mPortReasons   = desc("ncpos_forwarder_port_malformed_total", "malformations, by reason", append(portLabels, "reason")...)
	mSegPackets    = desc("ncpos_forwarder_segment_packets_total", "frames that entered the segment", "segment")
	mSegBytes      = desc("ncpos_forwarder_segment_bytes_total", "bytes that entered the segment", "segment")
	mSegForwarded  = desc("ncpos_forwarder_segment_forwarded_total", "frames that left the segment", "segment")
	mSegDrops      = desc("ncpos_forwarder_segment_drops_total", "frames dropped, by reason", "segment", "reason")
	mSegReasons    = desc("ncpos_forwarder_segment_malformed_total", "malformations, by reason", "segment", "reason")
	mSegForwarding = desc("ncpos_forwarder_segment_forwarding", "1 while the segment has no condition (ports up, frames that enter leave)", "segment")
	mFlows         = desc("ncpos_forwarder_flows", "flows in the flow table")
	mFlowTable     = desc("ncpos_forwarder_flow_table_size", "flow table capacity")
	mFlowsCreated  = desc("ncpos_forwarder_flows_created_total", "flows inserted")
	mFlowsExpired  = desc("ncpos_forwarder_flows_expired_total", "flows removed after the idle timeout")
	mFlowsEvicted  = desc("ncpos_forwarder_flows_evicted_total", "flows pushed out of a full table")
	mFlowFailures  = desc("ncpos_forwarder_flow_insert_failures_total", "inserts the table refused")
	mNewFlows      = desc("ncpos_forwarder_new_flows_per_second", "rate of new flows")
)

// statusCollector turns a Status into metrics. It is unchecked (Describe
// sends nothing): its label values follow the configured ports.
type statusCollector struct{ status func() forwarderapi.Status }

func (statusCollector) Describe(chan<- *prometheus.Desc) {}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(mLive, b2f(st.Live.Live))
	seen := map[[3]string]bool{} // a condition may hold for several pairs
	for _, cd := range st.Conditions {
		k := [3]string{string(cd.Kind), cd.Segment, cd.Port}
		if !seen[k] {
			seen[k] = true
			gauge(mCondition, 1, k[:]...)
		}
	}
	gauge(mHeartbeatAge, time.Since(st.Heartbeat).Seconds())
	gauge(mForwardCores, float64(len(st.Cores.Forwarding)))
	for _, p := range st.Ports {
		l := []string{p.Name, p.Interface, p.Segment}
		counter(mPortRx, p.RxPackets, l...)
		counter(mPortRxBytes, p.RxBytes, l...)
		counter(mPortPassed, p.Passed, l...)
		counter(mPortTx, p.TxPackets, l...)
		counter(mPortTxBytes, p.TxBytes, l...)
		for r, n := range p.Drops {
			counter(mPortDrops, n, append(l, r)...)
		}
		counter(mPortMalformed, p.Malformed, l...)
		for r, n := range p.MalformedReasons {
			counter(mPortReasons, n, append(l, r)...)
		}
	}
	for _, s := range st.Segments {
		counter(mSegPackets, s.Packets, s.Name)
		counter(mSegBytes, s.Bytes, s.Name)
		counter(mSegForwarded, s.Forwarded, s.Name)
		for r, n := range s.Drops {
			counter(mSegDrops, n, s.Name, r)
		}
		for r, n := range s.MalformedReasons {
			counter(mSegReasons, n, s.Name, r)
		}
		gauge(mSegForwarding, b2f(s.Forwarding), s.Name)
	}
	if fs := st.Flows; fs != nil {
		gauge(mFlows, float64(fs.Flows))
		gauge(mFlowTable, float64(fs.TableSize))
		counter(mFlowsCreated, fs.Created)
		counter(mFlowsExpired, fs.Expired)
		counter(mFlowsEvicted, fs.Evicted)
		counter(mFlowFailures, fs.InsertFailed)
		gauge(mNewFlows, fs.NewPerSecond)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
