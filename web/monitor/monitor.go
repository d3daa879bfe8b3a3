package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/web/api"
)

// Monitor samples the appliance every Interval: port counters (rates and
// the live charts' history), CPU load, daemons, bypass and forwarding
// state. Comparing samples it notices transitions and logs them as events.
// Handlers read its latest snapshot, so a page load costs no extra work
// and every client sees the same numbers.
type Monitor struct {
	Collector    *Collector
	Config       *config.Config // effective configuration: segments, forwarder
	Events       *events.Log
	SelfTestFile string        // default api.SelfTestFile
	Interval     time.Duration // default 1 s
	HistoryLen   int           // chart points per port, default 120
	Now          func() time.Time

	cfgMu  sync.Mutex     // guards cfg
	cfg    *config.Config // set by SetConfig; nil: Config
	stepMu sync.Mutex     // one Step at a time
	st     monitorState   // guarded by stepMu
	mu     sync.Mutex     // guards last, lastAt and doneAt
	// published is the snapshot last kept, for readers that must not
	// wait for a step (Published).
	published atomic.Pointer[api.Snapshot]
	// told are the conditions statusd's other parts told the monitor of
	// (Tell), by source.
	told   sync.Map // string -> []health.Condition
	last   sample
	lastAt time.Time // when the last snapshot's step began: its time
	doneAt time.Time // when it ended
}

// sample is what one step leaves for the handlers: the snapshot the API
// serves and, beside it, the raw CPU times of the same moment. /metrics
// exports those as counters (ncpos_cpu_seconds_total); the API shows the
// load computed from them instead.
type sample struct {
	snap *api.Snapshot
	cpu  []sysinfo.CPUTimes // nil when /proc/stat could not be read
}

// monitorState is what a Step remembers for the next one.
type monitorState struct {
	started   bool
	ports     map[string]*portState
	cpu       []sysinfo.CPUTimes
	bypass    map[string]string // segment -> state
	daemons   map[string]string // daemon -> state
	conds     map[string]health.Condition
	resetSeen bool
	selfTest  time.Time       // Finished of the last reported self-test
	hardware  json.RawMessage // bypassd's probe, once read
}

type portState struct {
	counters  api.PortCounters
	at        time.Time
	link      string
	linkSince time.Time
	hist      *history
	rates     api.PortRates
}

// Time is the monitor's clock: Now, or the time of day.
func (m *Monitor) Time() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Monitor) interval() time.Duration {
	if m.Interval > 0 {
		return m.Interval
	}
	return time.Second
}

// Configuration is the configuration in force: the last one SetConfig gave, or
// Config.
func (m *Monitor) Configuration() *config.Config {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	if m.cfg != nil {
		return m.cfg
	}
	return m.Config
}

// SetConfig makes cfg the configuration the monitor shows, from its next
// step.
func (m *Monitor) SetConfig(cfg *config.Config) {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	m.cfg = cfg
}

// Run steps every Interval until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.interval())
	defer t.Stop()
	for {
		m.Step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Latest returns the latest snapshot, stepping first when there is none
// or it is older than the interval (without Run, e.g. in tests), and a
// client that hangs up does not leave a snapshot of failed reads behind.
//
// A request that finds a step under way (Run's, or another request's)
// gets the snapshot there is rather than wait for the step. On a box so
// busy that a step takes longer than the interval, every snapshot would
// be stale by the time it was kept: each request waited for the step
// under way and then took one of its own, and a client that waits a few
// seconds (an update's first look at the box) was never answered. For
// the same reason a snapshot is fresh for an interval after its step
// ended, not began.
func (m *Monitor) Latest(ctx context.Context) *api.Snapshot {
	return m.latest(ctx).snap
}

// Tell sets the conditions source (a part of statusd beside the monitor:
// the configuration's change manager) holds now; none ends them. The
// next step shows them, and their start and end are events. It takes no
// lock the monitor's steps hold.
func (m *Monitor) Tell(source string, conds []health.Condition) {
	m.told.Store(source, slices.Clone(conds))
}

// Published is the snapshot last kept, nil before the first: it never
// waits for a step, and takes no lock. The configuration's change
// manager and the keeper of the last good configuration read it, and the
// monitor asks neither of them anything.
func (m *Monitor) Published() *api.Snapshot { return m.published.Load() }

// LatestCPU is Latest with the CPU times the step read beside it (nil
// when /proc/stat could not be read).
func (m *Monitor) LatestCPU(ctx context.Context) (*api.Snapshot, []sysinfo.CPUTimes) {
	s := m.latest(ctx)
	return s.snap, s.cpu
}

// latest is Latest with what the step kept beside the snapshot.
func (m *Monitor) latest(ctx context.Context) sample {
	if s, ok := m.fresh(); ok {
		return s
	}
	if !m.stepMu.TryLock() {
		if s, ok := m.keptSince(time.Time{}); ok {
			return s
		}
		m.stepMu.Lock() // the first snapshot: wait for it
	}
	defer m.stepMu.Unlock()
	if s, ok := m.fresh(); ok {
		return s
	}
	return m.step(context.WithoutCancel(ctx))
}

func (m *Monitor) fresh() (sample, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last.snap == nil || m.Time().Sub(m.doneAt) >= m.interval() {
		return sample{}, false
	}
	return m.last, true
}

// After returns a snapshot kept at t or later, stepping if there is
// none. An event a step raises is in the snapshot that step keeps, which
// After waits for: a notification of the event is made from it (Latest
// would give the one kept before, while the step runs).
func (m *Monitor) After(ctx context.Context, t time.Time) *api.Snapshot {
	if s, ok := m.keptSince(t); ok {
		return s.snap
	}
	m.stepMu.Lock()
	defer m.stepMu.Unlock()
	if s, ok := m.keptSince(t); ok {
		return s.snap
	}
	return m.step(context.WithoutCancel(ctx)).snap
}

// keptSince is the latest snapshot if it was kept at t or later (any,
// for the zero time).
func (m *Monitor) keptSince(t time.Time) (sample, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.last.snap != nil && !m.doneAt.Before(t)
}

// LastStep is when the latest snapshot was taken (zero before the first).
func (m *Monitor) LastStep() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastAt
}

// Step samples everything once and returns the new snapshot.
func (m *Monitor) Step(ctx context.Context) *api.Snapshot {
	m.stepMu.Lock()
	defer m.stepMu.Unlock()
	return m.step(ctx).snap
}

// step does Step's work under stepMu. The daemons are asked at the same
// time, so a hung one costs one timeout per step, not one per question.
func (m *Monitor) step(ctx context.Context) sample {
	now := m.Time()
	c := m.Collector
	var (
		sys              *api.System
		fwd              forwarderapi.Status
		byp              bypassapi.Status
		fwdDown, bypDown bool
		fwdErr, bypErr   error
		wg               sync.WaitGroup
		reports          = make([]health.Report, len(reportingDaemons))
	)
	for i, d := range reportingDaemons {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			reports[i], _ = ipc.NewClient(c.RunDir, d, time.Second).Report(rctx)
		}()
	}
	wg.Add(3)
	go func() { defer wg.Done(); sys = c.Collect(ctx) }()
	go func() {
		defer wg.Done()
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		fwd, fwdErr = forwarderapi.NewClient(c.RunDir, time.Second).Status(sctx)
		fwdDown = ipc.NotRunning(fwdErr)
	}()
	go func() {
		defer wg.Done()
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		byp, bypErr = bypassapi.NewClient(c.RunDir, time.Second).Status(sctx)
		bypDown = ipc.NotRunning(bypErr)
	}()
	wg.Wait()
	rec, err := sysinfo.ReadInitRecord(c.RunDir)
	if err != nil {
		rec = &sysinfo.InitRecord{}
	}
	snap := &api.Snapshot{Time: now.UTC(), System: sys}
	cfg := m.Configuration()
	if cfg == nil {
		cfg = &config.Config{}
	}

	// st is only touched here, under stepMu.
	first := !m.st.started
	if first {
		m.st = monitorState{started: true, ports: map[string]*portState{}, bypass: map[string]string{}, daemons: map[string]string{}, conds: map[string]health.Condition{}}
		m.startEvents(rec)
	}
	st := &m.st

	snap.Ports = m.samplePorts(now, rec, cfg, first)
	addDatapath(snap.Ports, fwd.Ports)
	var cpu []sysinfo.CPUTimes
	snap.Host, cpu, snap.Errors = m.sampleHost(sys)
	snap.Segments = segments(cfg, fwd, daemonNote("forwarderd", fwdErr, fwdDown, rec.Services),
		byp, daemonNote("bypassd", bypErr, bypDown, rec.Services))
	if bypErr == nil {
		if byp.Failsafe != "" {
			snap.Bypass = append(snap.Bypass, "failsafe, every pair held in bypass: "+byp.Failsafe)
		}
		if p := byp.Planned; p != nil {
			snap.Bypass = append(snap.Bypass, fmt.Sprintf("planned %s, every pair held in bypass: %s", p.Kind, p.Reason))
		}
	}
	snap.Conditions = m.conditions(now, reports, rec)
	m.bypassEvents(snap.Segments)
	m.daemonEvents(sys.Daemons, first)
	m.resetEvent(sys)
	if st.hardware == nil {
		st.hardware = readHardware(c.RunDir)
	}
	snap.Hardware = st.hardware
	if t, err := ReadSelfTest(m.SelfTestPath()); err != nil {
		snap.Errors = append(snap.Errors, err.Error())
	} else if t != nil {
		snap.SelfTest = t
		if !t.Finished.Equal(st.selfTest) {
			st.selfTest = t.Finished
			sev, verdict := events.Notice, "passed"
			switch {
			case t.Passed:
			case t.Verdict == api.VerdictInconclusive:
				sev, verdict = events.Warning, "INCONCLUSIVE"
			default:
				sev, verdict = events.Warning, "FAILED"
			}
			m.event(sev, events.KindSelfTest, []string{"result", verdict}, "self-test %s: %s", verdict, t.Summary)
		}
	}
	snap.Summary = summarize(snap, rec)

	s := sample{snap: snap, cpu: cpu}
	done := m.Time()
	m.mu.Lock()
	m.last, m.lastAt, m.doneAt = s, now, done
	m.published.Store(snap)
	m.mu.Unlock()
	return s
}

// SelfTestPath is where the self-test's report is kept.
func (m *Monitor) SelfTestPath() string {
	if m.SelfTestFile != "" {
		return m.SelfTestFile
	}
	return api.SelfTestFile
}

func (m *Monitor) event(sev events.Severity, kind string, fields []string, format string, args ...any) {
	if m.Events == nil {
		return
	}
	e := events.Event{Time: m.Time(), Severity: sev, Kind: kind, Message: fmt.Sprintf(format, args...), Fields: map[string]string{}}
	for i := 0; i+1 < len(fields); i += 2 {
		e.Fields[fields[i]] = fields[i+1]
	}
	e = m.Events.Add(e)
	log.Printf("event: %s %s: %s", e.Severity, e.Kind, e.Message)
}

// startEvents reports, once per statusd start, what init recorded: a
// rejected configuration is an event a remote engineer must hear about.
func (m *Monitor) startEvents(rec *sysinfo.InitRecord) {
	for _, r := range rec.Config.Rejected {
		m.event(events.Error, events.KindConfig, []string{"source", rec.Config.Source}, "configuration rejected: %s", r)
	}
}

// resetEvent reports why the box last started, once watchdogd says so. A
// watchdog reset is critical: the box rebooted itself.
func (m *Monitor) resetEvent(sys *api.System) {
	p := sys.Watchdog.Petter
	if m.st.resetSeen || p == nil || p.LastReset.Kind == "" {
		return
	}
	m.st.resetSeen = true
	if p.LastReset.Kind == "watchdog" {
		m.event(events.Critical, events.KindWatchdog, []string{"kind", p.LastReset.Kind},
			"appliance was reset by the hardware watchdog: %s", p.LastReset.Detail)
		return
	}
	m.event(events.Info, events.KindBoot, []string{"kind", p.LastReset.Kind}, "appliance started, last reset: %s", p.LastReset.Text)
}

// portNames lists the front-panel ports to show: init's mapping, or every
// interface but lo under its kernel name when init could not map any.
func portNames(root string, rec *sysinfo.InitRecord) map[string]string {
	if len(rec.Ports) > 0 {
		return rec.Ports
	}
	out := map[string]string{}
	ents, _ := filepath.Glob(filepath.Join(root, "sys/class/net/*"))
	for _, e := range ents {
		if n := filepath.Base(e); n != "lo" {
			out[n] = n
		}
	}
	return out
}

func (m *Monitor) samplePorts(now time.Time, rec *sysinfo.InitRecord, cfg *config.Config, first bool) []api.Port {
	root := m.Collector.Root
	names := portNames(root, rec)
	segOf := map[string]string{}
	for _, s := range cfg.Segments {
		for _, p := range s.Ports {
			segOf[p] = s.Name
		}
	}
	histLen := m.HistoryLen
	if histLen <= 0 {
		histLen = 120
	}
	var out []api.Port
	for name, ifname := range names {
		p := api.Port{Name: name, Interface: ifname, Segment: segOf[name], Role: "unused"}
		switch {
		case name == rec.ManagementPort:
			p.Role = "management"
		case p.Segment != "":
			p.Role = "data"
		}
		p.MAC = readTrim(filepath.Join(root, "sys/class/net", ifname, "address"))
		p.Link, p.SpeedMbps, p.Duplex = readLink(root, ifname)
		p.Up = p.Link == "up"
		cur, err := readPortCounters(root, ifname)
		if err != nil {
			p.Error = err.Error()
		}
		ps := m.st.ports[name]
		if ps == nil {
			ps = &portState{hist: newHistory(histLen), link: p.Link}
			m.st.ports[name] = ps
		} else {
			if err == nil && !ps.at.IsZero() {
				ps.rates = rates(ps.counters, cur, now.Sub(ps.at))
				ps.hist.add(api.RatePoint{T: now.UnixMilli(), PortRates: ps.rates})
			}
			if p.Link != ps.link {
				m.linkEvent(p, ps.link)
				ps.link, ps.linkSince = p.Link, now.UTC()
			}
		}
		if err == nil {
			ps.counters, ps.at = cur, now
		}
		p.Counters, p.Rates, p.LinkSince = ps.counters, ps.rates, ps.linkSince
		p.History = ps.hist.points(0)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return portLess(out[i], out[j]) })
	return out
}

// portLess puts the management port first, then the others as the front
// panel counts them.
func portLess(a, b api.Port) bool {
	if (a.Role == "management") != (b.Role == "management") {
		return a.Role == "management"
	}
	return natLess(a.Name, b.Name)
}

func (m *Monitor) linkEvent(p api.Port, was string) {
	sev := events.Notice
	if p.Link != "up" && p.Role != "unused" {
		sev = events.Warning
	}
	fields := []string{"port", p.Name, "interface", p.Interface, "link", p.Link}
	if p.Segment != "" {
		fields = append(fields, "segment", p.Segment)
	}
	m.event(sev, events.KindLink, fields, "port %s (%s) link %s (was %s)", p.Name, p.Interface, p.Link, was)
}

// sampleHost reads the host's load, memory and sensors, and returns the
// raw CPU times the load was computed from (nil when unreadable).
func (m *Monitor) sampleHost(sys *api.System) (api.Host, []sysinfo.CPUTimes, []string) {
	root := m.Collector.Root
	var h api.Host
	var errs []string
	cpus, btime, err := sysinfo.ReadStat(root)
	if err != nil {
		errs = append(errs, "cpu load: "+err.Error())
		cpus = nil
	} else {
		h.CPUs = cpuLoads(m.st.cpu, cpus)
		m.st.cpu = cpus
		if btime > 0 {
			h.BootTime = time.Unix(btime, 0).UTC()
		}
	}
	if h.Load, err = sysinfo.LoadAvg(root); err != nil {
		errs = append(errs, "load average: "+err.Error())
	}
	if h.Memory, err = readMemory(root); err != nil {
		errs = append(errs, "memory: "+err.Error())
	}
	h.Sensors = readHwmon(root)
	if h.Sensors == nil {
		h.Sensors = []api.Sensor{}
	}
	return h, cpus, errs
}

func (m *Monitor) daemonEvents(ds []api.Daemon, first bool) {
	for _, d := range ds {
		was, seen := m.st.daemons[d.Name]
		m.st.daemons[d.Name] = d.State
		if first || !seen || was == d.State || !d.Configured {
			continue
		}
		sev := events.Warning
		if d.State == api.DaemonHealthy {
			sev = events.Notice
		}
		msg := fmt.Sprintf("%s %s (was %s)", d.Name, d.State, was)
		if d.Reason != "" {
			msg += ": " + d.Reason
		}
		m.event(sev, events.KindDaemon, []string{"daemon", d.Name, "state", d.State}, "%s", msg)
	}
}

// readHardware reads bypassd's probe of this boot, nil until it is there.
func readHardware(runDir string) json.RawMessage {
	b, err := os.ReadFile(filepath.Join(runDir, bypassapi.HardwareFile))
	if err != nil {
		return nil
	}
	// Read as bypassd's contract says, and passed on as such.
	var h bypassapi.HardwareProbe
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	out, err := json.Marshal(h)
	if err != nil {
		return nil
	}
	return out
}
