package bypass

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/ipc"
)

// SimSetup is the setup of -sim-pair flags (pair=segment,ifA,ifB each):
// sim relays instead of the profile's pairs, as the lab runs bypassd.
func SimSetup(specs []string, timer, unit time.Duration, cutLinks bool) (Setup, error) {
	set := Setup{Source: "-sim-pair flags"}
	for _, spec := range specs {
		p, err := simPair(spec, timer, unit, cutLinks)
		if err != nil {
			return set, err
		}
		set.Pairs = append(set.Pairs, p)
	}
	return set, nil
}

// DaemonOptions are what bypassd runs with besides its pairs.
type DaemonOptions struct {
	Policy      Policy
	Budget      time.Duration
	ReadBack    time.Duration
	JournalPath string // "": memory only
	JournalCap  int64
	Overrides   string // "": memory only
	RunDir      string // the daemons' sockets
	// Reload reads the settings again for POST /reconfigure (nil: not
	// served).
	Reload func() (Settings, error)
}

// NewDaemon is the supervisor of set's pairs as bypassd runs it: probing
// forwarderd's health on its socket every budget/6 with a budget/3
// timeout, its transitions journalled.
func NewDaemon(set Setup, o DaemonOptions) *Supervisor {
	p := o.Policy.withDefaults()
	log.Printf("profile: %s; %d bypass pairs; budget %v, hold-down %v (at start %v)", set.Source, len(set.Pairs), o.Budget, p.HoldDown, p.StartHoldDown)
	return newSupervisor(set.Pairs, Options{
		Policy:    o.Policy,
		Budget:    o.Budget,
		Prober:    newForwarderProber(o.RunDir, o.Budget/3),
		Log:       newJournal(o.JournalPath, o.JournalCap),
		ReadBack:  o.ReadBack,
		Failsafe:  set.Failsafe,
		Overrides: o.Overrides,
		Reload:    o.Reload,
	})
}

// ErrStopped is a stop on a signal (shutdown, reboot, update or restart):
// bypassd then exits with ipc.ExitStopped.
var ErrStopped = errors.New("stopped")

// Serve runs the supervisor and its socket until a signal arrives on
// stop, then puts every pair into bypass, reads it back, and returns
// ErrStopped (joined with any error of that last step). Losing the
// socket also ends it, in bypass.
func Serve(sup *Supervisor, runDir string, stop <-chan os.Signal) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sup.Start(ctx)
	serveErr := make(chan error, 1)
	go func() { serveErr <- ipc.Serve(ctx, runDir, bypassapi.Name, sup.Handler()) }()
	go sup.Run(ctx)
	select {
	case sig := <-stop:
		err := sup.Plan("stop", fmt.Sprintf("bypassd stopping on %v (shutdown, reboot, update or restart)", sig))
		cancel()
		return errors.Join(ErrStopped, err)
	case err := <-serveErr:
		sup.Plan("stop", "bypassd lost its socket")
		return errors.Join(errors.New("serving the socket"), err)
	}
}
