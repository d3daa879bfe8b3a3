package web

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/snmptest"
	"github.com/ncpos/ncpos/web/snmp"
	"github.com/ncpos/ncpos/web/snmpview"
)

// TestSNMPAgreesWithMetrics walks the fixture's box with net-snmp's
// snmpbulkwalk and compares IF-MIB's 64-bit counters with /metrics, port
// by port, and reads NCPOS-MIB's segments.
func TestSNMPAgreesWithMetrics(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.traffic(4, time.Second, map[string]uint64{"LAN1": 1000, "LAN3": 500}, 100)
	f.bypassd.set("seg2", "bypass", "forwarder unhealthy: port LAN4 link down", f.clock())
	f.mon.Step(context.Background())

	view := &snmpview.Views{Monitor: f.mon, Config: f.cfg.SNMP, Start: f.clock().Add(-time.Hour)}
	id, _ := snmp.NewEngineID(32473)
	a, err := snmp.NewAgent(snmp.Config{Community: "noc-read-7", EngineID: id, Boots: 1, View: view.View})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Serve(ctx, pc)
	out, err := snmptest.Tool(t, "snmpbulkwalk", "-v2c", "-c", "noc-read-7", "udp:"+pc.LocalAddr().String(), "1.3.6.1")
	if err != nil {
		t.Fatal(err)
	}
	w := snmptest.Walk(out)
	fams := scrape(t, f)
	checked := 0
	for i := 1; i <= 5; i++ {
		name := strings.Trim(strings.TrimPrefix(w[fmt.Sprintf(".1.3.6.1.2.1.31.1.1.1.1.%d", i)], "STRING: "), `"`)
		if name == "" {
			t.Fatalf("no ifName.%d in:\n%s", i, out)
		}
		for col, metric := range map[int]string{6: "ncpos_port_receive_bytes_total", 7: "ncpos_port_receive_packets_total",
			10: "ncpos_port_transmit_bytes_total", 11: "ncpos_port_transmit_packets_total"} {
			want, ok := value(fams, metric, "port", name)
			if !ok {
				t.Fatalf("/metrics has no %s for %s", metric, name)
			}
			got := w[fmt.Sprintf(".1.3.6.1.2.1.31.1.1.1.%d.%d", col, i)]
			if got != "Counter64: "+strconv.FormatFloat(want, 'f', 0, 64) {
				t.Errorf("%s column %d: SNMP %q, /metrics %v", name, col, got, want)
			}
			checked++
		}
	}
	if v, _ := value(fams, "ncpos_port_receive_packets_total", "port", "LAN1"); v == 0 {
		t.Error("the fixture's traffic did not show: the comparison proves nothing")
	}
	t.Logf("%d counters agree between IF-MIB and /metrics", checked)
	for oid, want := range map[string]string{
		".1.3.6.1.2.1.1.5.0":           `STRING: "` + f.mon.Latest(ctx).System.Hostname + `"`,
		".1.3.6.1.2.1.1.2.0":           "OID: .1.3.6.1.4.1.32473.3.1",
		".1.3.6.1.4.1.32473.1.2.1.2.2": `STRING: "seg2"`,
		".1.3.6.1.4.1.32473.1.2.1.3.2": `STRING: "LAN3,LAN4"`,
		".1.3.6.1.4.1.32473.1.2.1.5.1": "INTEGER: 1",
		".1.3.6.1.4.1.32473.1.2.1.5.2": "INTEGER: 2",
		".1.3.6.1.2.1.2.2.1.8.5":       "INTEGER: 2", // LAN4's link is down
	} {
		if w[oid] != want {
			t.Errorf("%s = %q, want %q", oid, w[oid], want)
		}
	}

	// LLDP-MIB's remote table: LAN1 (ifIndex 2) hears sw-core-1.
	out, err = snmptest.Tool(t, "snmpwalk", "-v2c", "-c", "noc-read-7", "udp:"+pc.LocalAddr().String(), "1.0.8802.1.1.2.1.4.1")
	if err != nil {
		t.Fatal(err)
	}
	w = snmptest.Walk(out)
	for oid, want := range map[string]string{
		".1.0.8802.1.1.2.1.4.1.1.4.0.2.1": "INTEGER: 4",
		".1.0.8802.1.1.2.1.4.1.1.5.0.2.1": "Hex-STRING: 52 54 00 12 34 56 ",
		".1.0.8802.1.1.2.1.4.1.1.6.0.2.1": "INTEGER: 5",
		".1.0.8802.1.1.2.1.4.1.1.7.0.2.1": `STRING: "eth1"`,
		".1.0.8802.1.1.2.1.4.1.1.9.0.2.1": `STRING: "sw-core-1"`,
	} {
		if w[oid] != want {
			t.Errorf("%s = %q, want %q; the walk:\n%s", oid, w[oid], want, out)
		}
	}
	if len(w) != 7 {
		t.Errorf("lldpRemTable has %d objects, want LAN1's one neighbour's 7:\n%s", len(w), out)
	}
	// lldpStatsRemTablesDrops: the newcomers every port's full table
	// dropped.
	out, err = snmptest.Tool(t, "snmpget", "-v2c", "-c", "noc-read-7", "udp:"+pc.LocalAddr().String(), "1.0.8802.1.1.2.1.2.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if w = snmptest.Walk(out); w[".1.0.8802.1.1.2.1.2.4.0"] != "Gauge32: 5" {
		t.Errorf("lldpStatsRemTablesDrops: %s", out)
	}
}

func TestNotifications(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	snap := f.mon.Step(context.Background())
	trap, vars, ok := snmpview.Notification(events.Event{Kind: events.KindBypass, Fields: map[string]string{"segment": "seg2", "state": "bypass", "reason": "x"}}, snap)
	if !ok || trap.String() != ".1.3.6.1.4.1.32473.0.1" || len(vars) != 3 || vars[0].OID.String() != ".1.3.6.1.4.1.32473.1.2.1.2.2" || vars[1].Value != 2 {
		t.Errorf("bypass: %v %v %v", trap, vars, ok)
	}
	trap, vars, ok = snmpview.Notification(events.Event{Kind: events.KindLink, Fields: map[string]string{"port": "LAN1", "link": "up"}}, snap)
	if !ok || trap.String() != ".1.3.6.1.6.3.1.1.5.4" || vars[0].Value != 2 {
		t.Errorf("link up: %v %v %v", trap, vars, ok)
	}
	trap, _, ok = snmpview.Notification(events.Event{Kind: events.KindLink, Fields: map[string]string{"port": "LAN1", "link": "lowerlayerdown"}}, snap)
	if !ok || trap.String() != ".1.3.6.1.6.3.1.1.5.3" {
		t.Errorf("link down: %v %v", trap, ok)
	}
	if _, _, ok := snmpview.Notification(events.Event{Kind: events.KindLogin, Severity: events.Warning}, snap); ok {
		t.Error("a failed login became a notification")
	}
	// A critical event: what it says, with the box's health.
	owed := events.Event{Kind: events.KindConfig, Severity: events.Critical, Message: "configuration version 2: going back to version 1 failed: forwarderd: device busy"}
	trap, vars, ok = snmpview.Notification(owed, snap)
	if !ok || trap.String() != ".1.3.6.1.4.1.32473.0.3" || len(vars) != 2 || vars[0].OID.String() != ".1.3.6.1.4.1.32473.1.1.2.0" ||
		vars[1].OID.String() != ".1.3.6.1.4.1.32473.1.1.8.0" || vars[1].Value != owed.Message {
		t.Errorf("a critical event: %v %v %v", trap, vars, ok)
	}
	owed.Severity = events.Warning
	if _, _, ok := snmpview.Notification(owed, snap); ok {
		t.Error("a configuration warning became a notification")
	}
	// A watchdog reset stays ncposReset, critical as it is.
	if trap, _, _ := snmpview.Notification(events.Event{Kind: events.KindWatchdog, Severity: events.Critical, Fields: map[string]string{"kind": "watchdog"}}, snap); trap.String() != ".1.3.6.1.4.1.32473.0.2" {
		t.Errorf("a watchdog reset: %v", trap)
	}
}
