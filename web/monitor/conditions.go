package monitor

import (
	"slices"
	"time"

	"github.com/ncpos/ncpos/config"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/sysinfo"
)

// reportingDaemons are the daemons whose conditions statusd gathers: all
// but statusd itself, which adds its own.
var reportingDaemons = slices.DeleteFunc(config.ServiceNames(), func(d string) bool { return d == "statusd" })

// conditions merges the daemons' conditions with statusd's own (a rejected
// configuration) and turns those that began or ended into events. It runs
// under stepMu.
func (m *Monitor) conditions(now time.Time, reports []health.Report, rec *sysinfo.InitRecord) []health.Condition {
	all := []health.Condition{}
	for _, r := range reports {
		all = append(all, r.Conditions...)
	}
	for _, r := range rec.Config.Rejected {
		all = append(all, health.Condition{Kind: health.ConfigRejected, Source: "init", Since: rec.Started.UTC(), Detail: firstLine(r)})
	}
	if rec.ManagementPort != "" && rec.ManagementInterface == "" {
		all = append(all, health.Condition{Kind: health.ProfileIncomplete, Port: rec.ManagementPort, Source: "init", Since: rec.Started.UTC(),
			Detail: "management port " + rec.ManagementPort + " not found on this box: no DHCP, no status page on the network"})
	}
	m.told.Range(func(_, conds any) bool {
		all = append(all, conds.([]health.Condition)...)
		return true
	})
	if now.Year() < 2020 {
		all = append(all, health.Condition{Kind: health.ClockNotSet, Source: "statusd", Since: now.UTC(), Detail: "the system clock reads " + now.UTC().Format(time.RFC3339)})
	}
	health.Sort(all)
	seen := map[string]health.Condition{}
	for _, c := range all {
		k := c.Key()
		seen[k] = c
		if _, was := m.st.conds[k]; !was {
			m.conditionEvent(c, true)
		}
	}
	for k, c := range m.st.conds {
		if _, still := seen[k]; !still {
			m.conditionEvent(c, false)
		}
	}
	m.st.conds = seen
	return all
}

func (m *Monitor) conditionEvent(c health.Condition, began bool) {
	if c.Kind == health.ConfigRejected {
		return // startEvents reports it, with the whole error
	}
	class, _ := c.Kind.Class()
	sev, verb := events.Warning, "began"
	if !began {
		sev, verb = events.Notice, "ended"
	}
	fields := []string{"condition", string(c.Kind), "class", class.String(), "state", verb, "source", c.Source}
	for _, kv := range [][2]string{{"segment", c.Segment}, {"port", c.Port}, {"pair", c.Pair}} {
		if kv[1] != "" {
			fields = append(fields, kv[0], kv[1])
		}
	}
	m.event(sev, events.KindCondition, fields, "condition %s: %s", verb, c)
}
