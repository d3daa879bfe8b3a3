// Command init is the appliance's /gokrazy/init.
//
// It claims the hardware watchdog before gokrazy.Boot: Boot starts a
// goroutine that opens /dev/watchdog and pings it every second forever,
// which would keep a hung appliance alive. With the device already open here,
// that open fails (the watchdog core allows one opener) and gokrazy's pinger
// stands down; watchdogd later duplicates init's descriptor (pidfd_getfd)
// and pets only while the box is healthy. Then init boots gokrazy and
// supervises the daemons the configuration names.
package main

import (
	"log"
	"os"

	"github.com/ncpos/ncpos/appliance"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
)

// buildID is set by the image builder (-ldflags -X main.buildID=...).
var buildID = "dev"

func main() {
	// Init's own lines are on the console already (its standard error);
	// statusd's collector takes them too once it runs.
	log.SetOutput(logs.New("init", logs.Options{Out: os.Stderr, Socket: ipc.LogSocketPath(ipc.DefaultDir)}))
	log.SetFlags(log.Lshortfile)
	if err := appliance.Init(buildID); err != nil {
		log.Printf("ncpos init: %v", err)
		os.Exit(1)
	}
	select {}
}
