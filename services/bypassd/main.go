// Command bypassd is the ncpos bypass supervisor: it keeps each bypass
// pair's relay in bypass unless the forwarder is live and forwards the
// pair's segment, and reports on /run/ncpos/bypassd.sock (GET /livez,
// /health, /status, /metrics; POST/DELETE
// /override and /planned; POST /reconfigure, which reads the configuration
// again and takes which segment each pair follows, the budget and the
// hold-down in place; see bypass.Supervisor.Handler).
//
// It is a separate process from forwarderd so that it outlives a crashed
// or hung forwarder. Init starts it as /user/bypassd; with no flags it
// runs on the configuration init chose for this boot
// (/run/ncpos/config.toml), takes the
// platform profile (an operator's /perm/ncpos/profiles/<platform>.toml,
// with a filled-in register map, replaces the compiled-in one), and drives
// every bypass pair of the profile: pairs named by a segment follow the
// forwarder's health for that segment, the others stay in bypass. A
// profile that fails validation is refused (the error names file, line
// and field) and every pair it can still trust is held in bypass.
//
// Flags:
//
//	-config PATH          read this configuration file instead
//	-profile-dir DIR      operator profiles (/perm/ncpos/profiles; "" = compiled-in only)
//	-sim-pair P=SEG,A,B   a sim relay named P for segment SEG between kernel
//	                      interfaces A and B (repeatable; replaces the
//	                      profile's pairs, as the lab does)
//	-sim-timer D          controller timer of -sim-pair relays (1s; 0 = none)
//	-sim-timer-unit D     granularity of the sim controller timer (100ms)
//	-sim-cut-links        in bypass, -sim-pair relays mark their ports
//	                      dormant (link not up), as hardware relays cut the
//	                      NIC off
//	-budget D             forwarder unhealthy -> relays in bypass (300ms);
//	                      probes every budget/6 with a budget/3 timeout
//	-hold-down D          continuous health before normal again (5s)
//	-start-hold-down D    the same before the first normal after start
//	                      (0: 1s, or the hold-down when that is shorter)
//	-flap-window D        failures within it double the hold-down (2m)
//	-max-hold-down D      cap of the damped hold-down (2m)
//	-readback D           how often settled relays are read back (1s)
//	-log PATH             transition log appended on /perm ("" = memory only)
//	-log-cap BYTES        size at which the log file is rotated (256 KiB)
//	-overrides PATH       manual overrides kept across restarts and reboots
//	                      (/perm/ncpos/bypass-overrides.json; "" = memory only)
//
// At its first start in a boot (on a box, not with -sim-pair) it probes,
// read-only, what bypass and watchdog hardware the box has and which
// profiles fit it, logs that to the kernel log (the serial console) and
// keeps it in /run/ncpos/hardware.json for statusd.
//
// On SIGTERM or SIGINT (shutdown, reboot, update, restart) it puts every
// pair into bypass, reads it back, and exits; the relays stay there.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/appliance"
	"github.com/ncpos/ncpos/bypass"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/kmsg"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
)

type options struct {
	config      string
	profileDir  string
	simPairs    []string
	simTimer    time.Duration
	simUnit     time.Duration
	simCut      bool
	d           bypass.DaemonOptions
	sysClassNet string
	given       map[string]bool // flags set on the command line
}

type listFlag []string

func (l *listFlag) String() string     { return fmt.Sprint(*l) }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bypassd", flag.ContinueOnError)
	fs.StringVar(&o.config, "config", "", "configuration file (default: the one that takes effect on the appliance)")
	fs.StringVar(&o.profileDir, "profile-dir", bypass.DefaultProfileDir, "operator profiles replacing the compiled-in ones")
	fs.Var((*listFlag)(&o.simPairs), "sim-pair", "sim relay `pair=segment,ifA,ifB` (repeatable; replaces the profile's pairs)")
	fs.DurationVar(&o.simTimer, "sim-timer", time.Second, "controller timer of -sim-pair relays (0: none)")
	fs.BoolVar(&o.simCut, "sim-cut-links", false, "-sim-pair relays show the ports' links down in bypass, as relays that cut the NIC off do")
	fs.DurationVar(&o.simUnit, "sim-timer-unit", bypass.DefaultSimTimerUnit, "granularity of the sim controller timer")
	fs.DurationVar(&o.d.Budget, "budget", bypass.DefaultBudget, "time from the forwarder going unhealthy to the relays in bypass")
	fs.DurationVar(&o.d.Policy.HoldDown, "hold-down", bypass.DefaultHoldDown, "continuous health before a pair returns to normal")
	fs.DurationVar(&o.d.Policy.StartHoldDown, "start-hold-down", 0, "continuous health before a pair's first return to normal after bypassd starts it in bypass (0: 1s, or the hold-down when that is shorter)")
	fs.DurationVar(&o.d.Policy.FlapWindow, "flap-window", bypass.DefaultFlapWindow, "health failures within this window double the hold-down")
	fs.DurationVar(&o.d.Policy.MaxHoldDown, "max-hold-down", bypass.DefaultMaxHoldDown, "cap of the damped hold-down")
	fs.DurationVar(&o.d.ReadBack, "readback", time.Second, "how often settled relays are read back")
	fs.StringVar(&o.d.JournalPath, "log", bypass.DefaultJournalPath, "transition log file (\"\": memory only)")
	fs.Int64Var(&o.d.JournalCap, "log-cap", 256<<10, "size in bytes at which the transition log is rotated")
	fs.StringVar(&o.d.Overrides, "overrides", bypass.DefaultOverrideFile, "file keeping manual overrides across restarts (\"\": memory only)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
	if o.d.Budget < 6*time.Millisecond {
		return o, fmt.Errorf("-budget %v is too short, want at least 6ms", o.d.Budget)
	}
	o.sysClassNet, o.d.RunDir = config.SysClassNet, ipc.Dir()
	return o, nil
}

// setup works out the pairs (sim relays, or the profile's with the
// configuration's policy unless a flag overrides it) and builds the
// supervisor.
func setup(o options) (*bypass.Supervisor, bypass.Setup, error) {
	var set bypass.Setup
	if len(o.simPairs) > 0 {
		var err error
		if set, err = bypass.SimSetup(o.simPairs, o.simTimer, o.simUnit, o.simCut); err != nil {
			return nil, set, err
		}
	} else {
		settings, err := load(o)
		if err != nil {
			return nil, set, err
		}
		o.d.Budget, o.d.Policy = settings.Budget, settings.Policy
		o.d.Reload = func() (bypass.Settings, error) { return load(o) }
		set = bypass.Build(settings.Config, o.profileDir, o.sysClassNet, bypass.Open)
	}
	return bypass.NewDaemon(set, o.d), set, nil
}

// load reads the configuration, with the budget and hold-down flags
// given on the command line in force over it: at start and on every
// reconfigure.
func load(o options) (bypass.Settings, error) {
	cfg, err := appliance.DaemonConfig(o.config)
	if err != nil {
		return bypass.Settings{}, err
	}
	set := bypass.Settings{Config: cfg, Budget: o.d.Budget, Policy: o.d.Policy}
	if !o.given["budget"] {
		set.Budget = cfg.Bypass.Budget.Duration
	}
	if !o.given["hold-down"] {
		set.Policy.HoldDown = cfg.Bypass.HoldDown.Duration
	}
	if !o.given["start-hold-down"] {
		set.Policy.StartHoldDown = cfg.Bypass.StartHoldDown.Duration
		if o.given["hold-down"] {
			// A hold-down given alone is not outlasted at start.
			set.Policy.StartHoldDown = min(set.Policy.StartHoldDown, set.Policy.HoldDown)
		}
	}
	return set, nil
}

func main() {
	logs.Setup("bypassd")
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		log.Fatalf("bypassd: %v", err)
	}
	if len(o.simPairs) == 0 {
		// What bypass hardware this box has, before anything drives it.
		env, done := bypass.DefaultProbeEnv()
		if _, err := bypass.ProbeOnce(o.d.RunDir, env, kmsg.Path); err != nil {
			log.Printf("bypassd: %v", err)
		}
		done()
	}
	sup, _, err := setup(o)
	if err != nil {
		log.Fatalf("bypassd: %v", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	err = bypass.Serve(sup, o.d.RunDir, sigs)
	if errors.Is(err, bypass.ErrStopped) {
		log.Printf("bypassd: %v", err)
		os.Exit(ipc.ExitStopped)
	}
	log.Fatalf("bypassd: %v", err)
}
