package forwarder

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// MetricsHandler serves the Prometheus text format of Status: counters per
// port and segment (with reason labels), the flow table, and health.
func (f *Forwarder) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		WriteMetrics(w, f.Status())
	})
}

// WriteMetrics writes st in the Prometheus text format.
func WriteMetrics(w io.Writer, st Status) {
	m := &metricWriter{w: w, seen: map[string]bool{}}
	m.gauge("ncpos_forwarder_live", "1 while the forwarder is live (loop, maps, engine, programs)", nil, b2f(st.Live.Live))
	for _, c := range st.Conditions {
		m.gauge("ncpos_forwarder_condition", "1 for each condition that holds, by kind, segment and port", []string{"kind", string(c.Kind), "segment", c.Segment, "port", c.Port}, 1)
	}
	m.gauge("ncpos_forwarder_heartbeat_age_seconds", "time since the forwarder's last heartbeat", nil,
		time.Since(st.Heartbeat).Seconds())
	m.gauge("ncpos_forwarder_forwarding_cores", "CPUs that forward", nil, float64(len(st.Cores.Forwarding)))
	for _, p := range st.Ports {
		l := []string{"port", p.Name, "interface", p.Interface, "segment", p.Segment}
		m.counter("ncpos_forwarder_port_rx_packets_total", "frames that entered the datapath on the port", l, p.RxPackets)
		m.counter("ncpos_forwarder_port_rx_bytes_total", "bytes that entered the datapath on the port", l, p.RxBytes)
		m.counter("ncpos_forwarder_port_passed_total", "frames handed on towards the peer", l, p.Passed)
		m.counter("ncpos_forwarder_port_tx_packets_total", "frames that left through the port", l, p.TxPackets)
		m.counter("ncpos_forwarder_port_tx_bytes_total", "bytes that left through the port", l, p.TxBytes)
		for _, r := range sortedKeys(p.Drops) {
			m.counter("ncpos_forwarder_port_drops_total", "frames dropped, by reason", append(l, "reason", r), p.Drops[r])
		}
		m.counter("ncpos_forwarder_port_malformed_frames_total", "malformed frames (forwarded all the same)", l, p.Malformed)
		for _, r := range sortedKeys(p.MalformedReasons) {
			m.counter("ncpos_forwarder_port_malformed_total", "malformations, by reason", append(l, "reason", r), p.MalformedReasons[r])
		}
	}
	for _, s := range st.Segments {
		l := []string{"segment", s.Name}
		m.counter("ncpos_forwarder_segment_packets_total", "frames that entered the segment", l, s.Packets)
		m.counter("ncpos_forwarder_segment_bytes_total", "bytes that entered the segment", l, s.Bytes)
		m.counter("ncpos_forwarder_segment_forwarded_total", "frames that left the segment", l, s.Forwarded)
		for _, r := range sortedKeys(s.Drops) {
			m.counter("ncpos_forwarder_segment_drops_total", "frames dropped, by reason", append(l, "reason", r), s.Drops[r])
		}
		for _, r := range sortedKeys(s.MalformedReasons) {
			m.counter("ncpos_forwarder_segment_malformed_total", "malformations, by reason", append(l, "reason", r), s.MalformedReasons[r])
		}
		m.gauge("ncpos_forwarder_segment_forwarding", "1 while the segment has no condition (ports up, frames that enter leave)", l, b2f(s.Forwarding))
	}
	if fs := st.Flows; fs != nil {
		m.gauge("ncpos_forwarder_flows", "flows in the flow table", nil, float64(fs.Flows))
		m.gauge("ncpos_forwarder_flow_table_size", "flow table capacity", nil, float64(fs.TableSize))
		m.counter("ncpos_forwarder_flows_created_total", "flows inserted", nil, fs.Created)
		m.counter("ncpos_forwarder_flows_expired_total", "flows removed after the idle timeout", nil, fs.Expired)
		m.counter("ncpos_forwarder_flows_evicted_total", "flows pushed out of a full table", nil, fs.Evicted)
		m.counter("ncpos_forwarder_flow_insert_failures_total", "inserts the table refused", nil, fs.InsertFailed)
		m.gauge("ncpos_forwarder_new_flows_per_second", "rate of new flows", nil, fs.NewPerSecond)
	}
}

type metricWriter struct {
	w    io.Writer
	seen map[string]bool
}

func (m *metricWriter) head(name, help, typ string) {
	if !m.seen[name] {
		m.seen[name] = true
		fmt.Fprintf(m.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
}

func (m *metricWriter) counter(name, help string, labels []string, v uint64) {
	m.head(name, help, "counter")
	fmt.Fprintf(m.w, "%s%s %d\n", name, labelText(labels), v)
}

func (m *metricWriter) gauge(name, help string, labels []string, v float64) {
	m.head(name, help, "gauge")
	fmt.Fprintf(m.w, "%s%s %g\n", name, labelText(labels), v)
}

func labelText(kv []string) string {
	if len(kv) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		v := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(kv[i+1])
		fmt.Fprintf(&b, `%s="%s"`, kv[i], v)
	}
	b.WriteByte('}')
	return b.String()
}

func sortedKeys(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
