// Package web is statusd: the live dashboard, the JSON API under /api/v1
// (API.md), Prometheus /metrics merging every daemon's metrics, and
// authenticated control (bypass override, reboot), served on the
// management interface only. What it shows comes from /proc, /sys, init's
// record (/run/ncpos/init.json) and the daemons' unix sockets; a Monitor
// samples them every second, keeps short histories for the charts and
// turns transitions into events (package events) for the dashboard and
// remote syslog.
package monitor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/watchdog"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"github.com/ncpos/ncpos/web/api"
)

// Collector gathers System snapshots. Root and RunDir are "/" and
// /run/ncpos on the appliance; tests point them at fake trees.
type Collector struct {
	Root   string
	RunDir string
	// Time is the clock's state as statusd's NTP client keeps it; nil
	// where it runs none.
	Time func() api.TimeSync
}

// Collect reads everything once. A part that cannot be read is named in
// Errors rather than failing the whole page.
func (c *Collector) Collect(ctx context.Context) *api.System {
	s := &api.System{}
	fail := func(what string, err error) {
		s.Errors = append(s.Errors, what+": "+err.Error())
	}
	s.Hostname, _ = os.Hostname()
	if c.Time != nil {
		t := c.Time()
		s.Time = &t
	}
	var err error
	if s.Kernel, err = sysinfo.KernelVersion(c.Root); err != nil {
		fail("kernel version", err)
	}
	if s.Cmdline, err = sysinfo.Cmdline(c.Root); err != nil {
		fail("command line", err)
	}
	if up, err := sysinfo.Uptime(c.Root); err != nil {
		fail("uptime", err)
	} else {
		s.UptimeSeconds = up.Seconds()
	}
	mounts, err := sysinfo.Mounts(c.Root)
	if err != nil {
		fail("mounts", err)
	}
	for _, m := range mounts {
		s.Mounts = append(s.Mounts, api.Mount(m))
	}
	root, _ := sysinfo.FindMount(mounts, "/")
	s.Root = api.Mount(root)
	if m, ok := sysinfo.FindMount(mounts, "/perm"); ok {
		perm := api.Mount(m)
		s.Perm = &perm
	}
	if w, err := sysinfo.BootDiskWrites(c.Root); err != nil {
		fail("boot disk writes", err)
	} else {
		bd := api.DiskWrites(w)
		s.BootDisk = &bd
	}

	rec, err := sysinfo.ReadInitRecord(c.RunDir)
	if err != nil {
		fail("init record", err)
		rec = &sysinfo.InitRecord{}
	}
	s.BuildID = rec.BuildID
	s.MachineID = rec.MachineID
	s.ManagementPort = rec.ManagementPort
	s.ConfigSource = rec.Config.Source
	s.ConfigRejected = rec.Config.Rejected
	s.Interfaces = interfaces(c.Root, rec.Ports)

	s.Daemons = daemons(ctx, c.RunDir, rec.Services)

	s.Watchdog.GokrazyPinger = rec.Watchdog.GokrazyPinger
	s.Watchdog.ClaimedByInit = rec.Watchdog.FD >= 0 && rec.Watchdog.Error == ""
	if hs, err := watchdog.Holders(filepath.Join(c.Root, "proc")); err != nil {
		fail("watchdog holders", err)
	} else {
		s.Watchdog.Holders = apiHolders(hs)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if st, err := watchdogapi.NewClient(c.RunDir, time.Second).Status(wctx); err != nil {
		s.Watchdog.Error = err.Error()
	} else {
		s.Watchdog.Petter = apiPetter(&st)
	}
	return s
}

// daemons asks every known daemon's /livez at once (a hung daemon costs
// one timeout, not one per daemon). A daemon that is not configured but
// answers anyway (the lab starts daemons by hand) is shown as it is.
func daemons(ctx context.Context, runDir string, services []string) []api.Daemon {
	configured := map[string]bool{}
	names := append([]string(nil), KnownDaemons...)
	for _, s := range services {
		if !slices.Contains(names, s) {
			names = append(names, s)
		}
		configured[s] = true
	}
	out := make([]api.Daemon, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		out[i] = api.Daemon{Name: name, Configured: configured[name], State: api.DaemonHealthy, Healthy: true}
		if name == "statusd" {
			continue // this is statusd: it answers, so it is healthy
		}
		wg.Add(1)
		go func(d *api.Daemon) {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			err := ipc.NewClient(runDir, d.Name, time.Second).Live(hctx)
			switch {
			case err == nil:
			case ipc.NotRunning(err) && !d.Configured:
				d.State, d.Healthy = api.DaemonNotConfigured, false
			case ipc.NotRunning(err):
				d.State, d.Healthy, d.Reason = api.DaemonNotRunning, false, err.Error()
			default:
				d.State, d.Healthy, d.Reason = api.DaemonUnhealthy, false, err.Error()
			}
		}(&out[i])
	}
	wg.Wait()
	return out
}

// interfaces lists the kernel's network interfaces with their front-panel
// names.
func interfaces(root string, ports map[string]string) []api.Interface {
	byIf := map[string]string{}
	for port, ifname := range ports {
		byIf[ifname] = port
	}
	ents, _ := os.ReadDir(filepath.Join(root, "sys/class/net"))
	var out []api.Interface
	for _, e := range ents {
		name := e.Name()
		dir := filepath.Join(root, "sys/class/net", name)
		read := func(f string) string {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			return strings.TrimSpace(string(b))
		}
		it := api.Interface{Name: name, Port: byIf[name], MAC: read("address"), OperState: read("operstate"), Addresses: []string{}}
		if ni, err := net.InterfaceByName(name); err == nil {
			addrs, _ := ni.Addrs()
			for _, a := range addrs {
				it.Addresses = append(it.Addresses, a.String())
			}
		}
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
