package snmp

// The objects an ncpos appliance serves: SNMPv2-MIB's system group (RFC
// 3418), IF-MIB's ifTable and ifXTable (RFC 2863), LLDP-MIB's remote
// systems table (IEEE 802.1AB-2005 annex 12) and NCPOS-MIB
// (monitoring/NCPOS-MIB.txt). Column OIDs are without their row index.
var (
	SysDescr    = mustOID("1.3.6.1.2.1.1.1")
	SysObjectID = mustOID("1.3.6.1.2.1.1.2")
	SysUpTime   = mustOID("1.3.6.1.2.1.1.3")
	SysContact  = mustOID("1.3.6.1.2.1.1.4")
	SysName     = mustOID("1.3.6.1.2.1.1.5")
	SysLocation = mustOID("1.3.6.1.2.1.1.6")
	SysServices = mustOID("1.3.6.1.2.1.1.7")
	IfNumber    = mustOID("1.3.6.1.2.1.2.1")
	IfEntry     = mustOID("1.3.6.1.2.1.2.2.1") // columns: ifIndex(1) … ifOutErrors(20)
	IfXEntry    = mustOID("1.3.6.1.2.1.31.1.1.1")
	// lldpRemEntry, indexed by lldpRemTimeMark, lldpRemLocalPortNum and
	// lldpRemIndex.
	LldpRemEntry = mustOID("1.0.8802.1.1.2.1.4.1.1")
	// lldpStatsRemTablesDrops.0: the new neighbours a full table dropped
	// (a ZeroBasedCounter32, a Gauge32 on the wire).
	LldpStatsRemTablesDrops = mustOID("1.0.8802.1.1.2.1.2.4.0")
	LinkDownTrap            = mustOID("1.3.6.1.6.3.1.1.5.3")
	LinkUpTrap              = mustOID("1.3.6.1.6.3.1.1.5.4")

	NcposMIB          = mustOID("1.3.6.1.4.1.32473")
	NcposAppliance    = NcposMIB.Append(3, 1)
	NcposSystem       = NcposMIB.Append(1, 1) // scalars: build(1) … watchdogDevice(7)
	NcposSegmentEntry = NcposMIB.Append(1, 2, 1)
	NcposBypassChange = NcposMIB.Append(0, 1)
	NcposReset        = NcposMIB.Append(0, 2)
	NcposCritical     = NcposMIB.Append(0, 3)
)

// Columns of ifEntry and ifXEntry, and NCPOS-MIB's objects.
const (
	IfIndex, IfDescr, IfType, IfMtu, IfSpeed, IfPhysAddress, IfAdminStatus, IfOperStatus, IfLastChange = 1, 2, 3, 4, 5, 6, 7, 8, 9
	IfInOctets, IfInUcastPkts, IfInDiscards, IfInErrors                                                = 10, 11, 13, 14
	IfOutOctets, IfOutUcastPkts, IfOutDiscards, IfOutErrors                                            = 16, 17, 19, 20

	IfName, IfHCInOctets, IfHCInUcastPkts, IfHCOutOctets, IfHCOutUcastPkts = 1, 6, 7, 10, 11
	IfLinkUpDownTrapEnable, IfHighSpeed, IfPromiscuousMode                 = 14, 15, 16
	IfConnectorPresent, IfAlias, IfCounterDiscontinuityTime                = 17, 18, 19

	LldpRemChassisIDSubtype, LldpRemChassisID, LldpRemPortIDSubtype, LldpRemPortID = 4, 5, 6, 7
	LldpRemPortDesc, LldpRemSysName, LldpRemSysDesc                                = 8, 9, 10

	NcposBuild, NcposHealth, NcposProblems, NcposLastReset, NcposLastResetDetail, NcposWatchdogPets, NcposWatchdogDevice = 1, 2, 3, 4, 5, 6, 7
	NcposEventText                                                                                                       = 8

	NcposSegmentName, NcposSegmentPorts, NcposSegmentForwarding, NcposSegmentBypassState = 2, 3, 4, 5
	NcposSegmentBypassReason, NcposSegmentBypassOverride                                 = 6, 7
	NcposSegmentPackets, NcposSegmentForwarded, NcposSegmentDrops                        = 8, 9, 10
)
