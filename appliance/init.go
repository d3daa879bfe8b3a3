// Package appliance is the logic of the appliance's init (services/init):
// claim the watchdog, boot gokrazy, load the configuration that takes effect,
// map front-panel ports to kernel interfaces and supervise the daemons.
package appliance

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gokrazy/gokrazy"

	"github.com/ncpos/ncpos/appliance/initapi"
	"github.com/ncpos/ncpos/appliance/mgmtport"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/dataport"
	"github.com/ncpos/ncpos/internal/kmsg"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/timesync"
	"github.com/ncpos/ncpos/watchdog"
)

// Paths on the appliance's root file system, shared with the image builder.
const (
	// etcConfig is the configuration compiled into the image.
	etcConfig = "/etc/ncpos/ncpos.toml"
	// PermConfig overrides EtcConfig at run time when it is valid.
	PermConfig = "/perm/ncpos/ncpos.toml"
	// binDir holds the ncpos daemons.
	binDir = "/user"
	// dhcpPath is gokrazy's DHCP client.
	dhcpPath = "/gokrazy/dhcp"
)

// Init runs the appliance's boot sequence and returns once the daemons are
// supervised; the caller then blocks forever (init must not exit).
func Init(buildID string) error {
	if err := firstProcess(os.Getpid()); err != nil {
		return err
	}
	rec := &sysinfo.InitRecord{BuildID: buildID, Started: time.Now()}

	mounted, err := ensureDev("/dev")
	if err != nil {
		log.Printf("mounting devtmpfs: %v", err)
	}
	rec.DevMount = "kernel"
	if mounted {
		rec.DevMount = "init"
	}

	// Before gokrazy.Boot only the root file system is there, so the
	// watchdog device comes from the configuration built into the image.
	// Init claims the device only when watchdogd will pet it: claimed and
	// never petted, it would reset a healthy box one timeout after boot.
	// Without watchdogd, gokrazy's own pinger opens it and pets it every
	// second for as long as the kernel runs, which still resets a box
	// whose kernel hangs.
	early, _, _ := loadConfig(etcConfig, "")
	var wd *watchdog.Device
	if slices.Contains(early.Services, "watchdogd") {
		wd = claimWatchdog(early.Watchdog.Device, rec)
	} else {
		rec.Watchdog.Device = early.Watchdog.Device
		rec.Watchdog.FD = -1
		rec.Watchdog.Error = "not claimed: watchdogd is not in services"
		rec.Watchdog.GokrazyPinger = "pets the device unconditionally (watchdogd is not configured)"
		log.Printf("watchdogd not configured: leaving %s to gokrazy's pinger", early.Watchdog.Device)
	}

	if err := gokrazy.Boot(buildID); err != nil {
		return fmt.Errorf("gokrazy.Boot: %w", err)
	}

	tuneLogging("/proc/sys")

	// /perm is mounted: a board whose clock battery is dead starts no
	// earlier than the box's last run, before any daemon logs a line.
	if d, err := timesync.Restore(timesync.SaveFile, timesync.System{}); err != nil {
		log.Printf("clock: the last time kept: %v", err)
	} else if d > 0 {
		log.Printf("clock: was %v behind the last time kept; set forward to it", d.Round(time.Second))
	}

	if id, err := machineID(machineIDPath); err != nil {
		log.Printf("machine id: %v", err)
	} else {
		rec.MachineID = id
	}

	choice := ChooseConfig(etcConfig, PermConfig, LastGoodConfig)
	if trial, err := takeTrial(TrialConfig); err != nil {
		choice.Rejected = append(choice.Rejected, err)
	} else if trial != nil {
		choice.Config, choice.Text, choice.Source = trial.Config, trial.Text, trial.Source
	}
	cfg, source, rejected := choice.Config, choice.Source, choice.Rejected
	rec.Config.Source = source
	if err := writeBootConfig(BootConfig, choice.Text); err != nil {
		log.Printf("keeping this boot's configuration in %s: %v (the daemons read the files themselves)", BootConfig, err)
	}
	for _, r := range rejected {
		log.Printf("configuration rejected: %v", r)
		rec.Config.Rejected = append(rec.Config.Rejected, r.Error())
	}
	if wd != nil && !slices.Contains(cfg.Services, "watchdogd") {
		// The image's configuration runs watchdogd, the one on /perm does
		// not: nobody would pet the device init holds.
		log.Printf("watchdogd not in services of %s: init pets %s itself", source, wd.Identity)
		rec.Watchdog.GokrazyPinger = "init pets the device unconditionally (watchdogd is not configured)"
		go petForever(wd)
		wd = nil
	}

	ports, err := cfg.Profile().Resolve("/sys/class/net")
	if err != nil {
		log.Printf("mapping ports: %v", err)
		rec.PortErrors = err.Error()
	}
	rec.Ports = ports
	rec.ManagementPort = cfg.Management.Port
	rec.ManagementInterface = ports[cfg.Management.Port]
	// Before any daemon runs, every port but the management port is
	// quieted (it stays down until forwarderd or the self-test takes it).
	for label, ifname := range ports {
		if label == cfg.Management.Port || ifname == "" {
			continue
		}
		if err := dataport.Quiet("/", ifname); err != nil {
			log.Printf("data port %s: %v", label, err)
		}
	}

	b := &box{config: BootConfig, resolv: resolvConf}
	if rec.ManagementInterface == "" {
		// The management port is never guessed: any other interface may
		// be a data port cabled to a network that must never reach the
		// box. Without it the box forwards, and is reached through its
		// serial console until the profile or the configuration is fixed.
		log.Printf("management port %s not found on this box: no DHCP and no status page on the network", cfg.Management.Port)
	} else {
		b.port = &mgmtport.Port{Ifname: rec.ManagementInterface, Out: os.Stderr,
			DHCP: []string{dhcpPath, "-interface=" + rec.ManagementInterface}}
	}
	if err := b.take(cfg); err != nil {
		log.Printf("box settings: %v", err)
	}
	go func() {
		if err := ipc.Serve(context.Background(), ipc.DefaultDir, initapi.Name, b.handler()); err != nil {
			log.Printf("init's socket: %v", err)
		}
	}()

	var services []*gokrazy.Service
	for _, name := range cfg.Services {
		cmd, err := daemonCommand(name, cfg, rec, wd)
		if err != nil {
			log.Printf("not starting %s: %v", name, err)
			continue
		}
		// The daemons put their log lines on the serial console too.
		cmd.Env = append(os.Environ(), logs.ConsoleEnv+"="+kmsg.Path)
		rec.Services = append(rec.Services, name)
		services = append(services, gokrazy.NewService(cmd))
	}

	if testPrograms != nil {
		services = append(services, testPrograms()...)
	}

	if err := sysinfo.WriteInitRecord(ipc.DefaultDir, rec); err != nil {
		log.Printf("writing init record: %v", err)
	}
	quietStdin()
	return gokrazy.SuperviseServices(services)
}

// quietStdin gives init /dev/null as its standard input. gokrazy's
// supervisor reads init's standard input, the console, and on any key
// starts a root shell (/perm/sh or /tmp/serial-busybox/ash) there: the box
// has no shell, and its consoles belong to the setup menu statusd serves.
// Reading /dev/null ends gokrazy's reader at once.
func quietStdin() {
	null, err := os.Open(os.DevNull)
	if err != nil {
		log.Printf("the console stays init's standard input (%v): gokrazy reads it for a shell", err)
		return
	}
	os.Stdin = null
}

// firstProcess refuses to boot anywhere but as the box's first process.
// Started by mistake on another machine (a developer's, a build host),
// init would claim its watchdog, which resets that machine once init
// exits, and gokrazy.Boot would mount over its /tmp, /run, /dev/pts,
// /dev/shm and /proc.
func firstProcess(pid int) error {
	if pid != 1 {
		return fmt.Errorf("runs only as a box's first process (pid 1), not as pid %d: it would take this machine's watchdog and mount over its /tmp and /run", pid)
	}
	return nil
}

// testPrograms supervises a test image's test programs. Only init built
// for a test image (the ncpos_testimage build tag, see testimage.go) sets
// it: a production init has no code that starts anything it was not
// configured to.
var testPrograms func() []*gokrazy.Service

// petForever pets the watchdog every second for as long as init runs, as
// gokrazy's own pinger would.
func petForever(wd *watchdog.Device) {
	for range time.Tick(time.Second) {
		if err := wd.Ping(); err != nil {
			log.Printf("petting the watchdog: %v", err)
		}
	}
}

// ensureDev mounts devtmpfs on dev unless the kernel already did
// (CONFIG_DEVTMPFS_MOUNT). It reports whether it mounted.
func ensureDev(dev string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dev, "null")); err == nil {
		return false, nil
	}
	if err := syscall.Mount("devtmpfs", dev, "devtmpfs", 0, ""); err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// claimWatchdog opens the watchdog and keeps it open for the life of init,
// so gokrazy's unconditional pinger cannot. The descriptor stays
// close-on-exec: watchdogd fetches it with pidfd_getfd, so no other child
// inherits it.
func claimWatchdog(path string, rec *sysinfo.InitRecord) *watchdog.Device {
	rec.Watchdog.Device = path
	rec.Watchdog.FD = -1
	wd, err := watchdog.Open(path)
	if err != nil {
		rec.Watchdog.Error = err.Error()
		rec.Watchdog.GokrazyPinger = "no watchdog device to ping"
		log.Printf("no hardware watchdog: %v", err)
		return nil
	}
	rec.Watchdog.Identity = wd.Identity
	rec.Watchdog.FD = int(wd.Fd())
	// Prove the point: a second open, as gokrazy's pinger will try, fails.
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		f.Close()
		rec.Watchdog.GokrazyPinger = "WARNING: device can be opened twice; gokrazy may ping it"
	} else if errors.Is(err, syscall.EBUSY) {
		rec.Watchdog.GokrazyPinger = "stood down: device busy (held by init)"
	} else {
		rec.Watchdog.GokrazyPinger = "cannot open: " + err.Error()
	}
	log.Printf("claimed watchdog %s (%s) as fd %d before gokrazy.Boot", path, wd.Identity, wd.Fd())
	return wd
}

// tuneLogging lets the daemons' log lines through: the kernel log takes
// every line of a daemon that keeps /dev/kmsg open (its default lets ten
// through in five seconds; the daemons bound their own rate), and
// statusd's log socket queues a burst of lines (the default queue of a
// datagram socket is ten).
func tuneLogging(procSys string) {
	for _, t := range []struct{ file, value string }{
		{"kernel/printk_devkmsg", "on"},
		{"net/unix/max_dgram_qlen", "512"},
	} {
		if err := os.WriteFile(filepath.Join(procSys, t.file), []byte(t.value+"\n"), 0o644); err != nil {
			log.Printf("logging: %v", err)
		}
	}
}

// daemonCommand builds the command line of one ncpos daemon from the
// configuration.
func daemonCommand(name string, cfg *config.Config, rec *sysinfo.InitRecord, wd *watchdog.Device) (*exec.Cmd, error) {
	path := filepath.Join(binDir, name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("not in this image: %w", err)
	}
	var args []string
	switch name {
	case "watchdogd":
		if wd == nil {
			return nil, fmt.Errorf("no watchdog device (%s)", rec.Watchdog.Error)
		}
		args = []string{
			"-fd-pid=1",
			"-fd=" + strconv.Itoa(int(wd.Fd())),
			"-device=" + cfg.Watchdog.Device,
			"-timeout=" + cfg.Watchdog.Timeout.String(),
			"-interval=" + cfg.Watchdog.Interval.String(),
			"-grace=" + cfg.Watchdog.BootGrace.String(),
			"-require=" + strings.Join(requiredDaemons(cfg), ","),
		}
	case "statusd":
		args = []string{
			"-interface=" + rec.ManagementInterface,
			"-port=" + strconv.Itoa(cfg.Status.Port),
			"-http-port=" + strconv.Itoa(cfg.Status.HTTPPort),
		}
	}
	return exec.Command(path, args...), nil
}

// requiredDaemons are the daemons whose /healthz gates the watchdog: every
// configured one but watchdogd itself.
func requiredDaemons(cfg *config.Config) []string {
	var out []string
	for _, s := range cfg.Services {
		if s != "watchdogd" {
			out = append(out, s)
		}
	}
	return out
}
