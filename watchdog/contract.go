package watchdog

import "github.com/ncpos/ncpos/ipc"

// What watchdogd reports on its socket, and what statusd shows of the
// watchdog, is the daemons' contract, in ipc.
type (
	Status     = ipc.WatchdogStatus
	CheckState = ipc.CheckState
	LastReset  = ipc.LastReset
	Holder     = ipc.WatchdogHolder
)
