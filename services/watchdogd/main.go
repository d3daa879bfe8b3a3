// Command watchdogd pets the hardware watchdog that init claimed before
// gokrazy.Boot, but only while the box is live: every required daemon
// answers its /livez in time and says it is live, and memory and file
// descriptors last. What the daemons report of the network or the box (a
// link down, a relay in bypass, an undrivable relay, a degraded /perm) never
// stops the pets, since a reset mends none of it; watchdogd reports a
// degraded /perm as a box condition on its /health. Before it stops petting
// it records the failing check in /perm; after the reset it reports why the
// box last restarted. It serves its status on /run/ncpos/watchdogd.sock,
// where POST /reconfigure reads the configuration again and takes its
// timeout, interval and boot grace in place (the device and the daemons
// it requires are taken only at boot).
//
// Flags (init sets them from the configuration):
//
//	-fd-pid 1 -fd N     duplicate init's watchdog descriptor (pidfd_getfd)
//	-device PATH        the device (opened directly without -fd-pid)
//	-timeout, -interval hardware timeout and check/pet interval
//	-grace              pet regardless of health this long after boot
//	-require a,b        daemons whose /livez must pass
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ncpos/ncpos/appliance"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/watchdog"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

func main() {
	logs.Setup("watchdogd")
	var (
		fdPid    = flag.Int("fd-pid", 0, "duplicate the watchdog descriptor from this process (init is 1)")
		fd       = flag.Int("fd", -1, "descriptor number of the watchdog in -fd-pid")
		device   = flag.String("device", "/dev/watchdog", "watchdog device; opened directly when no -fd-pid is given")
		timeout  = flag.Duration("timeout", 30*time.Second, "hardware timeout to set")
		interval = flag.Duration("interval", 5*time.Second, "how often to check health and pet")
		grace    = flag.Duration("grace", 120*time.Second, "after boot, pet regardless of health for this long")
		require  = flag.String("require", "", "comma-separated daemons whose /livez must pass")
		records  = flag.String("records", watchdog.DefaultRecordDir, "folder for the reset records")
	)
	flag.Parse()
	if err := run(*fdPid, *fd, *device, *timeout, *interval, *grace, *require, *records); err != nil {
		log.Fatalf("watchdogd: %v", err)
	}
}

// checks are what the gate holds the box to: each required daemon's
// /livez within interval, memory and file descriptors.
func checks(require string, interval time.Duration) []watchdog.Check {
	var out []watchdog.Check
	for _, d := range strings.Split(require, ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, watchdog.LiveCheck(ipc.Dir(), d, interval))
		}
	}
	return append(out, watchdog.MemoryCheck("/", 0.05), watchdog.FDCheck("/", 0.9))
}

func run(fdPid, fd int, device string, timeout, interval, grace time.Duration, require, recordDir string) error {
	if interval <= 0 || 2*interval >= timeout {
		return fmt.Errorf("-interval %v must be positive and below half of -timeout %v", interval, timeout)
	}
	var (
		dev    *watchdog.Device
		err    error
		source string
	)
	if fdPid > 0 {
		dev, err = watchdog.FromProcess(fdPid, fd)
		source = fmt.Sprintf("fd %d of pid %d (claimed by init before gokrazy.Boot)", fd, fdPid)
	} else {
		dev, err = watchdog.Open(device)
		source = "opened " + device
	}
	if err != nil {
		return err
	}
	if got, err := dev.SetTimeout(timeout); err != nil {
		log.Printf("keeping the driver's timeout: %v", err)
	} else {
		log.Printf("%s: timeout %v", dev.Identity, got)
	}
	base := watchdogapi.Status{Device: device, Identity: dev.Identity, Source: source}
	if t, err := dev.Timeout(); err == nil {
		base.TimeoutSec = int(t / time.Second)
	}

	now := time.Now()
	rec := watchdog.Records{Dir: recordDir}
	bootStatus, err := dev.BootStatus()
	if err != nil {
		log.Print(err)
	}
	bootID, _ := sysinfo.BootID("/")
	base.LastReset, err = rec.DecideLastReset(bootStatus, bootID, now)
	if err != nil {
		log.Printf("reset records: %v", err)
	}
	log.Printf("last reset: %s", base.LastReset.Text)

	up, err := sysinfo.Uptime("/")
	if err != nil {
		return err
	}
	gate := &watchdog.Gate{Timeout: interval, Boot: now.Add(-up), Grace: grace, Checks: checks(require, interval)}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	sup := watchdog.NewSupervisor(dev, gate, rec, interval, base)
	go sup.Run(ctx)

	reg := prometheus.NewRegistry()
	reg.MustRegister(watchdog.Collector{S: sup})
	mux := ipc.Handler(watchdog.Reporter(sup, "/", 1<<20), func() any { return sup.Status() }, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /reconfigure", func(w http.ResponseWriter, r *http.Request) {
		cfg, err := appliance.DaemonConfig("")
		if err != nil {
			http.Error(w, "reading the configuration: "+err.Error(), http.StatusUnprocessableEntity)
			return
		}
		wd := cfg.Watchdog
		res, err := sup.Retime(r.Context(), watchdog.Times{Timeout: wd.Timeout.Duration, Interval: wd.Interval.Duration,
			Grace: wd.BootGrace.Duration, Checks: checks(require, wd.Interval.Duration)})
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		log.Printf("reconfigured: timeout %d s, interval %v s, grace %v s", res.TimeoutSec, res.IntervalSec, res.GraceSec)
		ipc.WriteJSON(w, res)
	})
	err = ipc.Serve(ctx, ipc.Dir(), watchdogapi.Name, mux)
	// Serve returns on SIGTERM, which gokrazy sends before a reboot or
	// poweroff: record it as planned before exiting. (If nobody reboots,
	// the hardware fires later and the watchdog record wins.)
	if werr := rec.WritePlanned("reboot", time.Now()); werr != nil {
		log.Print(werr)
	}
	return err
}
