package snmp

import (
	"slices"

	"github.com/gosnmp/gosnmp"
)

func compare(a, b OID) int { return slices.Compare(a, b) }

// The agent's own objects: SNMPv2-MIB's snmp group (RFC 3418), the
// engine (SNMP-FRAMEWORK-MIB, RFC 3411) and usmStats (RFC 3414).
var (
	snmpGroup  = mustOID("1.3.6.1.2.1.11")
	engineOIDs = mustOID("1.3.6.1.6.3.10.2.1")
	usmStats   = mustOID("1.3.6.1.6.3.15.1.1")
)

func (a *Agent) fullView() mergedView {
	c := func(o OID, n uint32, v uint64) Var {
		return Var{OID: o.Append(n, 0), Type: gosnmp.Counter32, Value: uint32(v)}
	}
	s := &a.Stats
	own := []Var{
		{OID: SysUpTime.Append(0), Type: gosnmp.TimeTicks, Value: a.sysUpTime()},
		c(snmpGroup, 1, s.InPkts.Load()),
		c(snmpGroup, 2, s.OutPkts.Load()),
		c(snmpGroup, 3, s.BadVersions.Load()),
		c(snmpGroup, 4, s.BadCommunityNames.Load()),
		c(snmpGroup, 6, s.ASNParseErrs.Load()),
		{OID: snmpGroup.Append(30, 0), Type: gosnmp.Integer, Value: 2}, // snmpEnableAuthenTraps: disabled
		{OID: engineOIDs.Append(1, 0), Type: gosnmp.OctetString, Value: a.engineID},
		{OID: engineOIDs.Append(2, 0), Type: gosnmp.Integer, Value: int(a.boots)},
		{OID: engineOIDs.Append(3, 0), Type: gosnmp.Integer, Value: int(a.engineTime())},
		{OID: engineOIDs.Append(4, 0), Type: gosnmp.Integer, Value: 65507},
		c(usmStats, 1, s.UnsupportedSecLevels.Load()),
		c(usmStats, 2, s.NotInTimeWindows.Load()),
		c(usmStats, 3, s.UnknownUserNames.Load()),
		c(usmStats, 4, s.UnknownEngineIDs.Load()),
		c(usmStats, 5, s.WrongDigests.Load()),
		c(usmStats, 6, s.DecryptionErrors.Load()),
	}
	ownView, _ := NewView(own)
	var v *View
	if a.view != nil {
		v = a.view()
	}
	return mergedView{v, ownView}
}

// Counters is the agent's statistics by name, for /metrics.
func (s *Stats) Counters() map[string]uint64 {
	return map[string]uint64{
		"received":              s.InPkts.Load(),
		"answered":              s.OutPkts.Load(),
		"bad_version":           s.BadVersions.Load(),
		"bad_community":         s.BadCommunityNames.Load(),
		"malformed":             s.ASNParseErrs.Load(),
		"unsupported_sec_level": s.UnsupportedSecLevels.Load(),
		"not_in_time_window":    s.NotInTimeWindows.Load(),
		"unknown_user":          s.UnknownUserNames.Load(),
		"unknown_engine_id":     s.UnknownEngineIDs.Load(),
		"wrong_digest":          s.WrongDigests.Load(),
		"decryption_error":      s.DecryptionErrors.Load(),
		"unknown_pdu":           s.UnknownPDUs.Load(),
		"rate_limited":          s.RateLimited.Load(),
	}
}
