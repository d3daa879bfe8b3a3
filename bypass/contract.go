package bypass

import "github.com/ncpos/ncpos/ipc"

// The states, events and capabilities of a relay, and the shapes of
// bypassd's /status and control requests, are the daemons' contract, in
// ipc.
type (
	State           = ipc.RelayState
	Event           = ipc.RelayEvent
	Caps            = ipc.RelayCaps
	TimerCaps       = ipc.RelayTimerCaps
	Status          = ipc.BypassStatus
	HealthStatus    = ipc.BypassForwarder
	PairStatus      = ipc.PairStatus
	TimerStatus     = ipc.TimerStatus
	Duration        = ipc.Duration
	Override        = ipc.Override
	Planned         = ipc.Planned
	Entry           = ipc.BypassEntry
	OverrideRequest = ipc.OverrideRequest
	PlanRequest     = ipc.PlanRequest
)

const (
	Normal       = ipc.RelayNormal
	Bypass       = ipc.RelayBypass
	Disconnect   = ipc.RelayDisconnect
	Unknown      = ipc.RelayUnknown
	PowerOff     = ipc.EventPowerOff
	OSOff        = ipc.EventOSOff
	PowerRestore = ipc.EventPowerRestore
	PowerUp      = ipc.EventPowerUp
	TimerExpiry  = ipc.EventTimerExpiry

	ReadsRelay      = ipc.ReadsRelay
	ReadsController = ipc.ReadsController
	ReadsLatch      = ipc.ReadsLatch
	ReadsTool       = ipc.ReadsTool
	ReadsNothing    = ipc.ReadsNothing
)

var (
	// States are the settable states, in a fixed order.
	States = ipc.RelayStates
	// Events are all events, in a fixed order.
	Events = ipc.RelayEvents
)
