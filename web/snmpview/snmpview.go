// Package snmpview is what statusd's SNMP agent serves and sends: the
// objects of the MIBs the box implements, built from the monitor's
// snapshot, and the notifications its events make.
package snmpview

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/lldp"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/snmp"
)

// Views turns the monitor's snapshots into what the SNMP agent serves,
// building a view once per snapshot (a walk asks for it hundreds of times
// in a row), and the events into notifications.
type Views struct {
	Monitor *monitor.Monitor
	Config  config.SNMP
	Start   time.Time // the agent's start: sysUpTime 0, for ifLastChange

	mu   sync.Mutex
	snap *api.Snapshot
	view *snmp.View
}

// View is the view of the latest snapshot.
func (v *Views) View() *snmp.View {
	snap := v.Monitor.Latest(context.Background())
	v.mu.Lock()
	defer v.mu.Unlock()
	if snap != v.snap || v.view == nil {
		view, err := build(snap, v.Config, v.Start)
		if err != nil {
			// Two objects at one OID is a bug here, not in the snapshot.
			panic(err)
		}
		v.snap, v.view = snap, view
	}
	return v.view
}

// build lays a snapshot out as SNMPv2-MIB's system group, IF-MIB's
// ifTable and ifXTable (ifIndex is the port's place on the dashboard, from
// 1) and NCPOS-MIB.
func build(snap *api.Snapshot, cfg config.SNMP, start time.Time) (*snmp.View, error) {
	var vars []snmp.Var
	str := func(o snmp.OID, s string) { vars = append(vars, snmp.Var{OID: o, Type: gosnmp.OctetString, Value: s}) }
	integer := func(o snmp.OID, n int) { vars = append(vars, snmp.Var{OID: o, Type: gosnmp.Integer, Value: n}) }
	c32 := func(o snmp.OID, n uint64) {
		vars = append(vars, snmp.Var{OID: o, Type: gosnmp.Counter32, Value: uint32(n)})
	}
	c64 := func(o snmp.OID, n uint64) { vars = append(vars, snmp.Var{OID: o, Type: gosnmp.Counter64, Value: n}) }
	g32 := func(o snmp.OID, n uint64) {
		vars = append(vars, snmp.Var{OID: o, Type: gosnmp.Gauge32, Value: uint(min(n, math.MaxUint32))})
	}

	sys := snap.System
	if sys == nil {
		sys = &api.System{}
	}
	str(snmp.SysDescr.Append(0), fmt.Sprintf("ncpos %s, Linux %s", sys.BuildID, sys.KernelRelease()))
	vars = append(vars, snmp.Var{OID: snmp.SysObjectID.Append(0), Type: gosnmp.ObjectIdentifier, Value: snmp.NcposAppliance.String()})
	str(snmp.SysContact.Append(0), cfg.Contact)
	str(snmp.SysName.Append(0), sys.Hostname)
	str(snmp.SysLocation.Append(0), cfg.Location)
	integer(snmp.SysServices.Append(0), 2+64) // a layer 2 device with applications

	integer(snmp.IfNumber.Append(0), len(snap.Ports))
	for i, p := range snap.Ports {
		idx := uint32(i + 1)
		col := func(c uint32) snmp.OID { return snmp.IfEntry.Append(c, idx) }
		xcol := func(c uint32) snmp.OID { return snmp.IfXEntry.Append(c, idx) }
		integer(col(snmp.IfIndex), int(idx))
		str(col(snmp.IfDescr), p.Name+" ("+p.Interface+")")
		integer(col(snmp.IfType), 6) // ethernetCsmacd
		if p.Datapath != nil && p.Datapath.MTU > 0 {
			integer(col(snmp.IfMtu), p.Datapath.MTU)
		}
		speed := uint64(0)
		if p.SpeedMbps > 0 {
			speed = uint64(p.SpeedMbps) * 1e6
		}
		g32(col(snmp.IfSpeed), speed)
		mac, _ := net.ParseMAC(p.MAC)
		vars = append(vars, snmp.Var{OID: col(snmp.IfPhysAddress), Type: gosnmp.OctetString, Value: []byte(mac)})
		admin := 1
		if p.Role == "unused" {
			admin = 2
		}
		integer(col(snmp.IfAdminStatus), admin)
		integer(col(snmp.IfOperStatus), operStatus(p.Link))
		last := uint32(0)
		if !p.LinkSince.IsZero() && p.LinkSince.After(start) {
			last = uint32(p.LinkSince.Sub(start) / (10 * time.Millisecond))
		}
		vars = append(vars, snmp.Var{OID: col(snmp.IfLastChange), Type: gosnmp.TimeTicks, Value: last})
		k := p.Counters
		if p.Error == "" {
			c32(col(snmp.IfInOctets), k.RxBytes)
			c32(col(snmp.IfInUcastPkts), k.RxPackets)
			c32(col(snmp.IfInDiscards), k.RxDropped)
			c32(col(snmp.IfInErrors), k.RxErrors)
			c32(col(snmp.IfOutOctets), k.TxBytes)
			c32(col(snmp.IfOutUcastPkts), k.TxPackets)
			c32(col(snmp.IfOutDiscards), k.TxDropped)
			c32(col(snmp.IfOutErrors), k.TxErrors)
			c64(xcol(snmp.IfHCInOctets), k.RxBytes)
			c64(xcol(snmp.IfHCInUcastPkts), k.RxPackets)
			c64(xcol(snmp.IfHCOutOctets), k.TxBytes)
			c64(xcol(snmp.IfHCOutUcastPkts), k.TxPackets)
		}
		str(xcol(snmp.IfName), p.Name)
		integer(xcol(snmp.IfLinkUpDownTrapEnable), 1)
		g32(xcol(snmp.IfHighSpeed), speed/1e6)
		integer(xcol(snmp.IfPromiscuousMode), truth(p.Role == "data"))
		integer(xcol(snmp.IfConnectorPresent), 1)
		alias := p.Role
		if p.Segment != "" {
			alias = "segment " + p.Segment
		}
		str(xcol(snmp.IfAlias), alias)
		vars = append(vars, snmp.Var{OID: xcol(snmp.IfCounterDiscontinuityTime), Type: gosnmp.TimeTicks, Value: uint32(0)})
	}

	// LLDP-MIB's remote systems: lldpRemLocalPortNum is the port's
	// ifIndex, lldpRemTimeMark 0 (every entry), lldpRemIndex the
	// neighbour's, which it keeps while it stays.
	var drops uint64
	for _, p := range snap.Ports {
		if p.LLDP != nil {
			drops += p.LLDP.Dropped
		}
	}
	g32(snmp.LldpStatsRemTablesDrops, drops)
	for i, p := range snap.Ports {
		if p.LLDP == nil {
			continue
		}
		for _, n := range p.LLDP.Neighbors {
			col := func(c uint32) snmp.OID { return snmp.LldpRemEntry.Append(c, 0, uint32(i+1), uint32(n.Index)) }
			integer(col(snmp.LldpRemChassisIDSubtype), n.ChassisIDSubtype)
			vars = append(vars, snmp.Var{OID: col(snmp.LldpRemChassisID), Type: gosnmp.OctetString, Value: lldp.WireID(n.ChassisIDSubtype, n.ChassisID, true)})
			integer(col(snmp.LldpRemPortIDSubtype), n.PortIDSubtype)
			vars = append(vars, snmp.Var{OID: col(snmp.LldpRemPortID), Type: gosnmp.OctetString, Value: lldp.WireID(n.PortIDSubtype, n.PortID, false)})
			str(col(snmp.LldpRemPortDesc), limit255(n.PortDescription))
			str(col(snmp.LldpRemSysName), limit255(n.SystemName))
			str(col(snmp.LldpRemSysDesc), limit255(n.SystemDescription))
		}
	}

	ns := func(c uint32) snmp.OID { return snmp.NcposSystem.Append(c, 0) }
	str(ns(snmp.NcposBuild), sys.BuildID)
	integer(ns(snmp.NcposHealth), healthValue(snap.Summary.State))
	str(ns(snmp.NcposProblems), limit255(strings.Join(snap.Summary.Problems, "; ")))
	kind, detail, pets, device := 1, "", uint64(0), ""
	if p := sys.Watchdog.Petter; p != nil {
		kind = resetKind(p.LastReset.Kind)
		detail, pets, device = p.LastReset.Detail, p.Pings, p.Device
	}
	integer(ns(snmp.NcposLastReset), kind)
	str(ns(snmp.NcposLastResetDetail), limit255(detail))
	c64(ns(snmp.NcposWatchdogPets), pets)
	str(ns(snmp.NcposWatchdogDevice), device)
	for i, s := range snap.Segments {
		idx := uint32(i + 1)
		col := func(c uint32) snmp.OID { return snmp.NcposSegmentEntry.Append(c, idx) }
		str(col(snmp.NcposSegmentName), s.Name)
		str(col(snmp.NcposSegmentPorts), strings.Join(s.Ports, ","))
		fwd := 3
		if f := s.Forwarding; f != nil {
			if f.Healthy {
				fwd = 1
			} else {
				fwd = 2
			}
			c64(col(snmp.NcposSegmentPackets), f.Packets)
			c64(col(snmp.NcposSegmentForwarded), f.Forwarded)
			c64(col(snmp.NcposSegmentDrops), f.Drops)
		}
		integer(col(snmp.NcposSegmentForwarding), fwd)
		state, reason, override := 5, s.BypassNote, false
		if b := s.Bypass; b != nil {
			state, reason, override = bypassState(b.State), b.Reason, b.Override != nil
		}
		integer(col(snmp.NcposSegmentBypassState), state)
		str(col(snmp.NcposSegmentBypassReason), limit255(reason))
		integer(col(snmp.NcposSegmentBypassOverride), truth(override))
	}
	return snmp.NewView(vars)
}

// Notification turns an event into an SNMP notification: a relay's
// change into ncposBypassChange, a port's link into IF-MIB's linkUp or
// linkDown, the decision why the box started into ncposReset, and any
// other event at critical severity (or worse) into ncposCritical. Other
// events send nothing.
func Notification(e events.Event, snap *api.Snapshot) (snmp.OID, []snmp.Var, bool) {
	switch e.Kind {
	case events.KindBypass:
		for i, s := range snap.Segments {
			if s.Name != e.Fields["segment"] {
				continue
			}
			col := func(c uint32) snmp.OID { return snmp.NcposSegmentEntry.Append(c, uint32(i+1)) }
			return snmp.NcposBypassChange, []snmp.Var{
				{OID: col(snmp.NcposSegmentName), Type: gosnmp.OctetString, Value: s.Name},
				{OID: col(snmp.NcposSegmentBypassState), Type: gosnmp.Integer, Value: bypassState(e.Fields["state"])},
				{OID: col(snmp.NcposSegmentBypassReason), Type: gosnmp.OctetString, Value: limit255(e.Fields["reason"])},
			}, true
		}
	case events.KindLink:
		for i, p := range snap.Ports {
			if p.Name != e.Fields["port"] {
				continue
			}
			col := func(c uint32) snmp.OID { return snmp.IfEntry.Append(c, uint32(i+1)) }
			trap, admin := snmp.LinkDownTrap, 1
			if e.Fields["link"] == "up" {
				trap = snmp.LinkUpTrap
			}
			if p.Role == "unused" {
				admin = 2
			}
			return trap, []snmp.Var{
				{OID: col(snmp.IfIndex), Type: gosnmp.Integer, Value: i + 1},
				{OID: col(snmp.IfAdminStatus), Type: gosnmp.Integer, Value: admin},
				{OID: col(snmp.IfOperStatus), Type: gosnmp.Integer, Value: operStatus(e.Fields["link"])},
			}, true
		}
	case events.KindWatchdog, events.KindBoot:
		detail := ""
		if snap.System != nil && snap.System.Watchdog.Petter != nil {
			detail = snap.System.Watchdog.Petter.LastReset.Detail
		}
		ns := func(c uint32) snmp.OID { return snmp.NcposSystem.Append(c, 0) }
		return snmp.NcposReset, []snmp.Var{
			{OID: ns(snmp.NcposLastReset), Type: gosnmp.Integer, Value: resetKind(e.Fields["kind"])},
			{OID: ns(snmp.NcposLastResetDetail), Type: gosnmp.OctetString, Value: limit255(detail)},
		}, true
	}
	if e.Severity <= events.Critical {
		ns := func(c uint32) snmp.OID { return snmp.NcposSystem.Append(c, 0) }
		return snmp.NcposCritical, []snmp.Var{
			{OID: ns(snmp.NcposHealth), Type: gosnmp.Integer, Value: healthValue(snap.Summary.State)},
			{OID: ns(snmp.NcposEventText), Type: gosnmp.OctetString, Value: limit255(e.Message)},
		}, true
	}
	return nil, nil, false
}

// operStatus maps a Linux operstate to IF-MIB's ifOperStatus.
func operStatus(link string) int {
	switch link {
	case "up":
		return 1
	case "down":
		return 2
	case "testing":
		return 3
	case "dormant":
		return 5
	case "notpresent":
		return 6
	case "lowerlayerdown":
		return 7
	}
	return 4 // unknown
}

func bypassState(s string) int {
	switch s {
	case "normal":
		return 1
	case "bypass":
		return 2
	case "disconnect":
		return 3
	}
	return 4
}

func resetKind(k string) int {
	switch k {
	case "power-on":
		return 2
	case "planned reboot":
		return 3
	case "watchdog":
		return 4
	}
	return 1
}

// truth is SNMPv2-TC's TruthValue.
func truth(b bool) int {
	if b {
		return 1
	}
	return 2
}

// limit255 cuts a text to DisplayString's 255 octets, dropping a rune
// the cut splits.
func limit255(s string) string { return limit(s, 255) }

// limit cuts s to at most n bytes, dropping a rune cut in two.
func limit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// healthValue is ncposHealth of a summary's state.
func healthValue(state string) int {
	return map[string]int{"ok": 1, "bypass": 2, "degraded": 3}[state]
}
