// Package monitoring holds what a fleet's Prometheus and Grafana need to
// watch ncpos appliances: alerting rules (rules.yml, unit-tested with
// promtool in rules_test.yml), Alertmanager's routing (alertmanager.yml)
// and a Grafana dashboard
// (grafana-dashboard.json). They are embedded so that tests elsewhere
// (the QEMU end-to-end test, the metric-name cross-check in web) use the
// very files an operator deploys.
package monitoring

import _ "embed"

// Rules is rules.yml: Prometheus alerting rules for job "ncpos".
//
//go:embed rules.yml
var Rules []byte

// Alertmanager is alertmanager.yml: Alertmanager's routing of those
// alerts to the NOC.
//
//go:embed alertmanager.yml
var Alertmanager []byte

// GrafanaDashboard is grafana-dashboard.json.
//
//go:embed grafana-dashboard.json
var GrafanaDashboard []byte
