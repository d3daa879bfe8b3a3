// Command statusd serves the appliance's dashboard, JSON API (/api/v1),
// Prometheus /metrics and authenticated control (bypass override, reboot)
// on the management interface only, and sends events to remote syslog when
// the configuration names a target. The logic lives in package web.
//
// Init starts it as /user/statusd -interface=<management interface>
// -port=<status.port> -http-port=<status.http_port>; the rest comes from
// the configuration in effect. It serves HTTPS with the box's own key,
// made at its first boot and kept on /perm, and announces the key's
// fingerprint on the kernel log (serial console).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/appliance"
	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/kmsg"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/lldp"
	"github.com/ncpos/ncpos/logs"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/timesync"
	"github.com/ncpos/ncpos/watchdog"
	"github.com/ncpos/ncpos/web"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/change"
	"github.com/ncpos/ncpos/web/configapi"
	"github.com/ncpos/ncpos/web/control"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/selfinstall"
	"github.com/ncpos/ncpos/web/selftest"
	"github.com/ncpos/ncpos/web/snmp"
	"github.com/ncpos/ncpos/web/update"
)

func main() {
	var (
		ifname   = flag.String("interface", "eth0", "management interface to serve on (only its addresses)")
		port     = flag.Int("port", 443, "HTTPS port")
		httpPort = flag.Int("http-port", 80, "plain HTTP port that redirects to HTTPS (0: none)")
		tlsDir   = flag.String("tls-dir", TLSDir, "where the box's TLS identity is kept")
		cfgPath  = flag.String("config", "", "configuration file (default: the one in effect on the appliance)")
		interval = flag.Duration("interval", time.Second, "sampling interval of ports, load and daemons")
		selfTest = flag.String("selftest", api.SelfTestFile, "latest self-test report")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *ifname, *port, *httpPort, *tlsDir, *cfgPath, *interval, *selfTest); err != nil {
		log.Fatalf("statusd: %v", err)
	}
}

// consoleLog is the kernel log init named for the daemons' lines, or nil.
func consoleLog() io.Writer {
	dev := os.Getenv(logs.ConsoleEnv)
	if dev == "" {
		return nil
	}
	f, err := os.OpenFile(dev, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		log.Printf("console log: %v", err)
		return nil
	}
	return f
}

func loadConfig(path string) (*config.Config, error) { return appliance.DaemonConfig(path) }

// configs serves the configuration init chose for this boot, and the
// versions kept on /perm.
func configs() *configapi.Configs {
	c := &configapi.Configs{InForce: func() ([]byte, error) { return os.ReadFile(appliance.BootConfig) }}
	if rec, err := sysinfo.ReadInitRecord(ipc.Dir()); err == nil {
		c.Source = rec.Config.Source
	}
	store, err := versions.Open(appliance.ConfigVersions, versions.DefaultKeep)
	if err != nil {
		log.Printf("configuration history unavailable: %v", err)
	}
	c.Versions = store
	return c
}

// changes is the box's manager of configuration changes on
// /run/ncpos/config.toml: forwarderd, bypassd and watchdogd take their
// parts over their sockets, init the box's hostname and management
// address over its own, statusd its own settings here, and a change is
// held to the monitor's view of the segments and daemons until confirmed.
func changes(cfg *config.Config, srv *web.Server, out *outputs, mon *monitor.Monitor, evlog *events.Log, clock *timesync.Keeper) *change.Manager {
	takers := change.DaemonTakers(ipc.Dir(), cfg.Services, time.Minute)
	takers[config.TakerStatus] = change.TakerFunc(func(context.Context) error {
		next, err := config.Load(appliance.BootConfig)
		if err != nil {
			return err
		}
		if err := srv.Reconfigure(next); err != nil {
			return err
		}
		clock.SetServers(next.Time.Servers)
		return out.take(next)
	})
	return &change.Manager{
		Store: srv.Configs.Versions, RunConfig: appliance.BootConfig, SettledFile: appliance.SettledConfig, PermConfig: appliance.PermConfig,
		LastGood: appliance.LastGoodConfig, Source: srv.Configs.Source, Takers: takers, Events: evlog,
		Hold:        change.BypassHold(ipc.Dir(), cfg.Services, 30*time.Second),
		TrialConfig: appliance.TrialConfig, Reboot: srv.Rebooter.Reboot,
		Tell: func(conds []health.Condition) { mon.Tell("configuration", conds) },
		Health: func(context.Context) ([]api.Segment, []api.Daemon, error) {
			snap := mon.Published()
			if snap == nil || snap.System == nil {
				return nil, nil, errors.New("no status yet")
			}
			return snap.Segments, snap.System.Daemons, nil
		},
	}
}

func run(ctx context.Context, ifname string, port, httpPort int, tlsDir, cfgPath string, interval time.Duration, selfTest string) error {
	// statusd's own lines go straight to the collector; the other daemons'
	// come over its socket. Forward is set as soon as the configuration
	// names a syslog target, before anything else runs: only a line about
	// the configuration itself stays on the box.
	collector := &logs.Collector{}
	log.SetOutput(logs.New("statusd", logs.Options{Out: os.Stderr, Console: consoleLog(), Local: func(l ipc.LogLine) { collector.Add(l) }}))
	log.SetFlags(0)
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	hostname, _ := os.Hostname()
	evlog := events.NewLog(0)
	out := &outputs{ctx: ctx, ifname: ifname, engineFile: snmp.EngineFile, evlog: evlog}
	evlog.AddSink(out)
	collector.Forward = out.forwardLine
	if err := out.takeSyslog(cfg.Syslog); err != nil {
		return err
	}
	id, tlsNote, err := identity(tlsDir, hostname, kmsg.Path)
	if err != nil {
		return err
	}
	go func() {
		if err := collector.Serve(ctx, ipc.LogSocketPath(ipc.Dir())); err != nil {
			log.Printf("log collector: %v", err)
		}
	}()
	pw, err := web.LoadPassword(cfg.Status, web.PasswordFile)
	if err != nil {
		log.Printf("control disabled: %v", err)
	}
	// The box's clock: NTP from the configured servers, the last good
	// time kept on /perm.
	clock := &timesync.Keeper{Clock: timesync.System{}, SaveFile: timesync.SaveFile,
		Note: func(sev events.Severity, msg string) { evlog.Note(sev, events.KindTime, nil, msg) }}
	clock.SetServers(cfg.Time.Servers)
	mon := &monitor.Monitor{
		Collector: &monitor.Collector{Root: "/", RunDir: ipc.Dir(), Time: clock.Status},
		Config:    cfg, Events: evlog, Interval: interval, SelfTestFile: selfTest,
	}
	clock.Conditions = func(c []health.Condition) { mon.Tell("time", c) }
	srv := &web.Server{
		Monitor:  mon,
		Auth:     web.Auth{Password: pw, AuthRead: cfg.Status.AuthRead},
		Rebooter: control.GokrazyRebooter{RunDir: ipc.Dir(), Records: watchdog.Records{Dir: watchdog.DefaultRecordDir}},
		Logs:     collector,
		// Install to internal disk, e.g. from a box booted off a USB stick.
		Installer: &selfinstall.DiskInstaller{},
		SelfTest:  selftest.New(ctx, mon.Configuration, selfTest), // RFC 2544 between the [selftest] test ports
		Names:     cfg.Status.Names,
		TLS:       id,
		TLSNote:   tlsNote,
	}
	srv.Auth.UseRADIUS(cfg.Auth, hostname)
	if err := srv.Auth.LoadAccounts(web.AccountsFile); err != nil {
		evlog.Note(events.Critical, events.KindControl, []string{"action", "accounts"},
			fmt.Sprintf("accounts not loaded, only %s signs in: %v", web.User, err))
	}
	if srv.Updates, err = update.LoadGate("/"); err != nil {
		log.Printf("updates over the network disabled: %v", err)
	} else {
		if box, err := bootpart.OpenBox("/", filepath.Join(ipc.Dir(), "boot")); err != nil {
			log.Printf("updates cannot reach the boot partition: %v", err)
		} else {
			srv.Boot, srv.BootFiles = box, box.Hashes
		}
	}
	out.attach(mon, srv)
	if _, err := os.Stat(appliance.BootConfig); err == nil {
		// On the appliance: the configuration changes in place, and the
		// one the box settled on is kept once it has proved itself.
		srv.Configs = configs()
		settled := func() ([]byte, error) { return os.ReadFile(appliance.BootConfig) }
		if srv.Configs.Versions != nil {
			srv.Configs.Changes = changes(cfg, srv, out, mon, evlog, clock)
			settled = srv.Configs.Changes.Settled
		}
		lg := &change.LastGood{After: 2 * time.Minute, Events: evlog, Keep: func() (bool, error) {
			text, err := settled()
			if err != nil {
				return false, err
			}
			return appliance.KeepLastGood(appliance.LastGoodConfig, text)
		}}
		go lg.Run(ctx, mon.Published, time.Second)
		if m := srv.Configs.Changes; m != nil {
			go m.Run(ctx) // once the monitor is whole: it reads the monitor
			// A pending change's deadline goes back when it was due
			// whatever the clock does; its record follows a step.
			clock.Stepped = func(time.Duration) { m.ClockStepped() }
		}
	}
	go clock.Run(ctx)
	// The setup menu on the serial and VGA consoles.
	serveConsoles(ctx, &consoleBox{ifname: ifname, port: cfg.Management.Port, tlsDir: tlsDir, fingerprint: id.Fingerprint, srv: srv, evlog: evlog})
	if ifname != "" {
		// The box says who it is on its management port, and only there:
		// the switch it is plugged into shows its name and addresses.
		build := "dev"
		if rec, err := sysinfo.ReadInitRecord(ipc.Dir()); err == nil {
			build = rec.BuildID
		}
		an := &lldp.Announcer{Ifname: ifname, PortDescription: cfg.Management.Port + ", management", Logf: log.Printf,
			Describe: func() (string, string) {
				name, _ := os.Hostname() // changes in place
				return name, "ncpos appliance, build " + build
			}}
		go an.Run(ctx)
	}
	if err := out.takeSNMP(cfg.SNMP); err != nil {
		return err
	}
	go mon.Run(ctx)

	// statusd is live while its monitor keeps sampling; the conditions it
	// shows are the other daemons', so it reports none of its own here.
	report := func() health.Report {
		last := mon.LastStep()
		var problems []health.Problem
		if age := time.Since(last); age > 10*interval+5*time.Second {
			problems = append(problems, health.Problem{Kind: health.HeartbeatStale, Detail: fmt.Sprintf("monitor stalled: last sample %v ago", age.Round(time.Second))})
		}
		return health.Report{Daemon: "statusd", Live: health.Live(last, problems...), Conditions: []health.Condition{}}
	}
	go func() {
		mux := ipc.Handler(report, func() any { return mon.Latest(ctx) }, nil)
		if err := ipc.Serve(ctx, ipc.Dir(), "statusd", mux); err != nil {
			log.Printf("statusd: %v", err)
		}
	}()
	return srv.Serve(ctx, ifname, port, httpPort, 2*time.Second)
}
