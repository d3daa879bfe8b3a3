package watchdog

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the supervisor's status as Prometheus metrics, read at
// scrape time so they never disagree with /status.
type Collector struct {
	S *Supervisor
}

var (
	descPets     = prometheus.NewDesc("ncpos_watchdog_pets_total", "Times watchdogd petted the hardware watchdog.", nil, nil)
	descPetting  = prometheus.NewDesc("ncpos_watchdog_petting", "1 while watchdogd pets, 0 once a required check failed.", nil, nil)
	descTimeout  = prometheus.NewDesc("ncpos_watchdog_timeout_seconds", "Hardware watchdog timeout.", nil, nil)
	descTimeLeft = prometheus.NewDesc("ncpos_watchdog_time_left_seconds", "Time until the hardware watchdog resets the box.", nil, nil)
	descCheck    = prometheus.NewDesc("ncpos_watchdog_check_ok", "1 while the health check passes.", []string{"check"}, nil)
	descReset    = prometheus.NewDesc("ncpos_watchdog_last_reset_info", "Why the box last started (kind: watchdog, planned reboot, power-on).", []string{"kind"}, nil)
)

// Describe implements prometheus.Collector.
func (c Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPets, descPetting, descTimeout, descTimeLeft, descCheck, descReset} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.S.Status()
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(descPets, prometheus.CounterValue, float64(st.Pings))
	ch <- prometheus.MustNewConstMetric(descPetting, prometheus.GaugeValue, b2f(st.Petting))
	ch <- prometheus.MustNewConstMetric(descTimeout, prometheus.GaugeValue, float64(st.TimeoutSec))
	if st.TimeLeftSec >= 0 {
		ch <- prometheus.MustNewConstMetric(descTimeLeft, prometheus.GaugeValue, float64(st.TimeLeftSec))
	}
	for _, chk := range st.Checks {
		ch <- prometheus.MustNewConstMetric(descCheck, prometheus.GaugeValue, b2f(chk.OK), chk.Name)
	}
	if st.LastReset.Kind != "" {
		ch <- prometheus.MustNewConstMetric(descReset, prometheus.GaugeValue, 1, st.LastReset.Kind)
	}
}
