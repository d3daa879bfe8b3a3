package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/monitor"
)

// fixtureConfig is a qemu box with two segments, each with a relay pair.
const fixtureConfig = `platform = "qemu"
hostname = "ncpos-lab"
services = ["forwarderd", "bypassd", "watchdogd", "statusd"]
[[segment]]
name = "seg1"
ports = ["LAN1", "LAN2"]
bypass = "pair1"
[[segment]]
name = "seg2"
ports = ["LAN3", "LAN4"]
bypass = "pair2"
`

// fixturePorts maps the front panel as init would.
var fixturePorts = map[string]string{"MGMT": "eth0", "LAN1": "eth1", "LAN2": "eth2", "LAN3": "eth3", "LAN4": "eth4"}

const fixturePassword = "s3cret-fixture-pw"

// testPassword is a control password as LoadPassword makes it, hashed at
// bcrypt's lowest cost so that tests stay fast.
func testPassword(t *testing.T, pw string) *Password {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return &Password{hash: h, source: "/perm/ncpos/control-password", file: filepath.Join(t.TempDir(), "control-password")}
}

// fixtureBoot is when the fake appliance booted: 3723 s before the
// fixture's clock starts (proc/uptime).
const fixtureBoot = 1796040000 - 3723

// fixture is a fake appliance: a /proc and /sys tree, init's record, the
// daemons' sockets (served by fakes), a clock the test moves, and a
// Server on top.
type fixture struct {
	t        *testing.T
	root     string
	run      string
	now      time.Time
	mu       sync.Mutex
	counters map[string]api.PortCounters // by interface
	cfg      *config.Config
	events   *events.Log
	mon      *monitor.Monitor
	srv      *Server
	bypassd  *fakeBypassd
	reboots  []string
	captures []forwarderapi.CaptureRequest // what the fake forwarderd was asked to capture
	cancel   context.CancelFunc
}

type fixtureOpts struct {
	noDaemons bool     // no forwarderd, bypassd, watchdogd sockets
	rejected  []string // configuration rejected at boot
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	cfg, err := config.Parse("ncpos.toml", []byte(fixtureConfig))
	if err != nil {
		t.Fatal(err)
	}
	// unix socket paths must stay short: use a short temporary folder
	run, err := os.MkdirTemp("", "ncpt-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	f := &fixture{
		t: t, root: t.TempDir(), run: run, cfg: cfg,
		now:      time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		counters: map[string]api.PortCounters{},
		events:   events.NewLog(0),
	}
	files := map[string]string{
		"proc/version":                       "Linux version 6.12.0-ncpos (ncpos@ncpos) #1 SMP\n",
		"proc/cmdline":                       "console=ttyS0,115200 root=PARTUUID=2a1b3c4d-02 ro\n",
		"proc/uptime":                        "3723.5 100.0\n",
		"proc/mounts":                        "/dev/root / squashfs ro,relatime 0 0\n/dev/sda4 /perm ext4 rw,relatime 0 0\n",
		"proc/loadavg":                       "0.42 0.30 0.25 1/80 999\n",
		"proc/meminfo":                       "MemTotal:        2048000 kB\nMemFree:          100000 kB\nMemAvailable:    1536000 kB\n",
		"proc/diskstats":                     "8 0 sda 1 0 2 3 4 0 10 0 0 0 0\n",
		"sys/class/hwmon/hwmon0/name":        "coretemp\n",
		"sys/class/hwmon/hwmon0/temp1_input": "47000\n",
		"sys/class/hwmon/hwmon0/temp1_label": "Package id 0\n",
		"sys/class/hwmon/hwmon0/temp1_crit":  "100000\n",
		"sys/class/hwmon/hwmon1/name":        "nct6775\n",
		"sys/class/hwmon/hwmon1/fan1_input":  "2400\n",
	}
	for name, content := range files {
		f.write(name, content)
	}
	f.setCPU(0)
	speeds := map[string]string{"eth0": "1000", "eth1": "10000", "eth2": "10000", "eth3": "1000", "eth4": "-1"}
	for port, ifname := range fixturePorts {
		f.write("sys/class/net/"+ifname+"/address", fmt.Sprintf("52:54:00:12:34:%02x\n", ifname[3]-'0'+0x10))
		f.setLink(ifname, map[bool]string{true: "up", false: "down"}[port != "LAN4"])
		f.write("sys/class/net/"+ifname+"/speed", speeds[ifname]+"\n")
		f.write("sys/class/net/"+ifname+"/duplex", "full\n")
		f.setCounters(ifname, api.PortCounters{})
	}
	rec := &sysinfo.InitRecord{BuildID: "test-build-7", ManagementPort: "MGMT", ManagementInterface: "eth0",
		Ports: fixturePorts, Services: cfg.Services}
	rec.Config.Source = "/etc/ncpos/ncpos.toml"
	rec.Config.Rejected = o.rejected
	if err := sysinfo.WriteInitRecord(run, rec); err != nil {
		t.Fatal(err)
	}
	hw, _ := json.Marshal(fixtureHardware)
	if err := os.WriteFile(filepath.Join(run, bypassapi.HardwareFile), hw, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	t.Cleanup(cancel)
	if !o.noDaemons {
		f.bypassd = startFakeBypassd(ctx, t, run, f.clock)
		serveFake(ctx, t, run, "watchdogd", fakeWatchdogStatus, fakeWatchdogMetrics)
		serveFake(ctx, t, run, "forwarderd", fakeForwarderStatus, fakeForwarderMetrics,
			map[string]http.HandlerFunc{"GET /capture": f.fakeCapture})
	}
	f.mon = &monitor.Monitor{
		Collector: &monitor.Collector{Root: f.root, RunDir: run}, Config: cfg, Events: f.events,
		SelfTestFile: filepath.Join(f.root, "perm/selftest.json"), Now: f.clock, HistoryLen: 120,
	}
	f.srv = &Server{Monitor: f.mon, Auth: Auth{Password: testPassword(t, fixturePassword)}, Rebooter: fakeRebooter{f}, Names: []string{"appliance.test"}}
	return f
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fixture) write(name, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) setLink(ifname, state string) {
	f.write("sys/class/net/"+ifname+"/operstate", state+"\n")
}

func (f *fixture) setCounters(ifname string, c api.PortCounters) {
	f.counters[ifname] = c
	for file, v := range map[string]uint64{
		"statistics/rx_packets": c.RxPackets, "statistics/tx_packets": c.TxPackets,
		"statistics/rx_bytes": c.RxBytes, "statistics/tx_bytes": c.TxBytes,
		"statistics/rx_dropped": c.RxDropped, "statistics/tx_dropped": c.TxDropped,
		"statistics/rx_errors": c.RxErrors, "statistics/tx_errors": c.TxErrors,
		"carrier_changes": c.CarrierChanges,
	} {
		f.write("sys/class/net/"+ifname+"/"+file, fmt.Sprintf("%d\n", v))
	}
}

// setCPU writes /proc/stat with each CPU busy for busy ticks more than
// idle ticks cumulative from t.
func (f *fixture) setCPU(tick uint64) {
	f.write("proc/stat", fmt.Sprintf("cpu  0 0 0 0 0 0 0 0\ncpu0 %d 0 %d %d 0 0 0 0\ncpu1 %d 0 0 %d 0 0 0 0\nbtime %d\n",
		tick*20, tick*5, tick*75, tick*5, tick*95, fixtureBoot))
}

// traffic moves the clock by d and adds to every port what flows at the
// given rates in that time, then steps the monitor.
func (f *fixture) traffic(steps int, d time.Duration, pps map[string]uint64, frame uint64) {
	for i := 0; i < steps; i++ {
		f.mu.Lock()
		f.now = f.now.Add(d)
		f.mu.Unlock()
		for port, ifname := range fixturePorts {
			c := f.counters[ifname]
			n := pps[port] * uint64(d/time.Second)
			c.RxPackets += n
			c.RxBytes += n * frame
			c.TxPackets += n * 99 / 100
			c.TxBytes += n * 99 / 100 * frame
			if port == "LAN3" {
				c.RxDropped += n / 100
			}
			f.setCounters(ifname, c)
		}
		f.setCPU(uint64(f.now.Unix() - fixtureBoot))
		f.mon.Step(context.Background())
	}
}

// get and do send requests to the server's handler.
func (f *fixture) do(r *http.Request) *httpResult {
	rec := newRecorder()
	f.srv.Handler().ServeHTTP(rec, r)
	return &httpResult{Code: rec.Code, Header: rec.Header(), Body: rec.Body.String()}
}

func (f *fixture) getJSON(path string, v any) {
	f.t.Helper()
	r := f.do(newRequest("GET", path, "", nil))
	if r.Code != 200 {
		f.t.Fatalf("GET %s = %d: %s", path, r.Code, r.Body)
	}
	if err := json.Unmarshal([]byte(r.Body), v); err != nil {
		f.t.Fatalf("GET %s: %v\n%s", path, err, r.Body)
	}
}

type fakeRebooter struct{ f *fixture }

func (r fakeRebooter) Reboot(ctx context.Context, reason string) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.reboots = append(r.f.reboots, reason)
	return nil
}

// serveFake serves a daemon's socket with a status JSON and metrics text.
func serveFake(ctx context.Context, t *testing.T, run, name, statusJSON, metrics string, extra ...map[string]http.HandlerFunc) {
	t.Helper()
	// The fake's /health carries the liveness and conditions in its
	// status, as forwarderd's does.
	report := func() health.Report {
		r := health.Report{Daemon: name, Live: health.Live(time.Now())}
		json.Unmarshal([]byte(statusJSON), &r)
		r.Daemon = name
		return r
	}
	mux := ipc.Handler(report, func() any { return json.RawMessage(statusJSON) },
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprint(w, metrics)
		}))
	for _, handlers := range extra {
		for pattern, h := range handlers {
			mux.HandleFunc(pattern, h)
		}
	}
	startIPC(ctx, t, run, name, mux)
}

func startIPC(ctx context.Context, t *testing.T, run, name string, h http.Handler) {
	t.Helper()
	go ipc.Serve(ctx, run, name, h)
	c := ipc.NewClient(run, name, time.Second)
	for deadline := time.Now().Add(5 * time.Second); c.Live(ctx) != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fake %s did not come up", name)
		}
	}
}

var fakeWatchdogStatus = func() string {
	st := watchdogapi.Status{Device: "/dev/watchdog", Identity: "i6300ESB timer", Source: "fd 3 of pid 1", TimeoutSec: 30,
		TimeLeftSec: 27, IntervalSec: 5, Petting: true, Pings: 740,
		Checks: []watchdogapi.CheckState{{Name: "forwarderd", OK: true}, {Name: "memory", OK: true}},
		LastReset: watchdogapi.LastReset{Kind: "watchdog", Detail: "forwarderd liveness failing since 11:58:01",
			Text: "watchdog (forwarderd liveness failing since 11:58:01)"}}
	b, _ := json.Marshal(st)
	return string(b)
}()

const fakeWatchdogMetrics = `# HELP ncpos_watchdog_pets_total Times watchdogd petted the hardware watchdog.
# TYPE ncpos_watchdog_pets_total counter
ncpos_watchdog_pets_total 740
# HELP ncpos_watchdog_last_reset_info Why the box last started (kind: watchdog, planned reboot, power-on).
# TYPE ncpos_watchdog_last_reset_info gauge
ncpos_watchdog_last_reset_info{kind="watchdog"} 1
`

// fakeForwarderStatus is a forwarderd /status (forwarderapi.Status) as it
// comes over the socket.
const fakeForwarderStatus = `{"engine":"xdp","mode":"forward","live":{"live":true},
 "conditions":[{"kind":"link_down","segment":"seg2","port":"LAN4","source":"forwarderd","since":"2026-01-01T00:00:00Z","detail":"port LAN4 (eth4) link down"}],
 "cores":{"online":[0,1],"forwarding":[1],"management":[0],"ports":[]},
 "segments":[
  {"name":"seg1","ports":["LAN1","LAN2"],"packets":123456,"bytes":98765432,"forwarded":123400,"drops":{"kernel_rx":3,"egress_lost":53},"malformed":2,"malformed_reasons":{"runt":2},"forwarding":true,"conditions":[]},
  {"name":"seg2","ports":["LAN3","LAN4"],"packets":1200,"bytes":1200000,"forwarded":0,"drops":{},"malformed":0,"malformed_reasons":{},"forwarding":false,"conditions":[{"kind":"link_down","segment":"seg2","port":"LAN4","source":"forwarderd","since":"2026-01-01T00:00:00Z","detail":"port LAN4 (eth4) link down"}]}],
 "ports":[{"name":"LAN1","interface":"eth1","segment":"seg1","peer":"LAN2","attach":"native","link":"up","mtu":1522,"max_frame":1540,"settings":[],
  "lldp_neighbors":[{"port":"LAN1","index":1,"chassis_id":"52:54:00:12:34:56","chassis_id_subtype":4,"port_id":"eth1","port_id_subtype":5,"ttl_seconds":120,
   "system_name":"sw-core-1","management_address":"192.0.2.7","last_seen":"2026-01-01T00:00:00Z","expires":"2026-01-01T00:02:00Z"}],
  "lldp_rejected":2,"lldp_last_error":"lldp: TLV 1 (type 85) at byte 14: length 170 runs past the frame's end (44 bytes left)","lldp_dropped":5}]}`

const fakeForwarderMetrics = `# HELP ncpos_forwarder_live 1 while the forwarder is live (loop, maps, engine, programs)
# TYPE ncpos_forwarder_live gauge
ncpos_forwarder_live 1
# HELP ncpos_forwarder_port_rx_packets_total frames that entered the datapath on the port
# TYPE ncpos_forwarder_port_rx_packets_total counter
ncpos_forwarder_port_rx_packets_total{port="LAN1",interface="eth1",segment="seg1"} 61728
`

// fakeBypassd speaks bypassd's socket API (bypass/api.go): GET /status
// with pairs, POST /override {"pair","state","reason","for","by"} and
// DELETE /override?pair=P&by=U, both answering with the status.
type fakeBypassd struct {
	mu       sync.Mutex
	pairs    map[string]*fakePair // by pair name
	requests []fakeOverrideReq
	now      func() time.Time
}

type fakePair struct {
	Name     string              `json:"name"`
	Segment  string              `json:"segment"`
	Ports    [2]string           `json:"ports"`
	Backend  string              `json:"backend"`
	State    string              `json:"state"`
	Desired  string              `json:"desired"`
	Cause    string              `json:"cause"`
	Since    time.Time           `json:"since"`
	Healthy  bool                `json:"forwarder_healthy"`
	Override *bypassapi.Override `json:"override,omitempty"`
}

type fakeOverrideReq struct {
	Method string `json:"-"`
	Pair   string `json:"pair"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	For    string `json:"for"`
	By     string `json:"by"`
	Update bool   `json:"update"`
}

func (b *fakeBypassd) status() any {
	var st struct {
		Pairs []fakePair `json:"pairs"`
		Log   []any      `json:"log"`
	}
	for _, n := range []string{"pair1", "pair2"} {
		st.Pairs = append(st.Pairs, *b.pairs[n])
	}
	return st
}

func startFakeBypassd(ctx context.Context, t *testing.T, run string, now func() time.Time) *fakeBypassd {
	b := &fakeBypassd{now: now, pairs: map[string]*fakePair{
		"pair1": {Name: "pair1", Segment: "seg1", Ports: [2]string{"LAN1", "LAN2"}, Backend: "sim", State: "normal", Desired: "normal",
			Cause: "forwarder healthy", Since: now().Add(-time.Hour), Healthy: true},
		"pair2": {Name: "pair2", Segment: "seg2", Ports: [2]string{"LAN3", "LAN4"}, Backend: "sim", State: "bypass", Desired: "bypass",
			Cause: "forwarder unhealthy: port LAN4 link down", Since: now().Add(-90 * time.Second)},
	}}
	mux := ipc.Handler(ipc.AlwaysLive("bypassd"), func() any {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.status()
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# HELP ncpos_bypass_transitions_total Relay transitions of a bypass pair, by the state entered.\n# TYPE ncpos_bypass_transitions_total counter\nncpos_bypass_transitions_total{pair=\"pair2\",state=\"bypass\"} 3\n")
	}))
	mux.HandleFunc("POST /override", func(w http.ResponseWriter, r *http.Request) {
		var req fakeOverrideReq
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "override: "+err.Error(), http.StatusBadRequest)
			return
		}
		req.Method = "POST"
		b.mu.Lock()
		defer b.mu.Unlock()
		p := b.pairs[req.Pair]
		if p == nil {
			http.Error(w, fmt.Sprintf("override: no pair %q", req.Pair), http.StatusBadRequest)
			return
		}
		b.requests = append(b.requests, req)
		o := &bypassapi.Override{State: bypassapi.State(req.State), Reason: req.Reason, By: req.By, Set: b.now(), Update: req.Update}
		if req.For != "" {
			d, _ := time.ParseDuration(req.For)
			o.Expires = b.now().Add(d)
		}
		p.Override, p.State, p.Desired, p.Cause, p.Since = o, req.State, req.State, "override by "+req.By+": "+req.Reason, b.now()
		ipc.WriteJSON(w, b.status())
	})
	mux.HandleFunc("DELETE /override", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		q := r.URL.Query()
		p := b.pairs[q.Get("pair")]
		if p == nil {
			http.Error(w, "no such pair", http.StatusBadRequest)
			return
		}
		b.requests = append(b.requests, fakeOverrideReq{Method: "DELETE", Pair: q.Get("pair"), By: q.Get("by")})
		p.Override = nil
		ipc.WriteJSON(w, b.status())
	})
	startIPC(ctx, t, run, "bypassd", mux)
	return b
}

// set changes a pair's state as bypassd's policy would.
func (b *fakeBypassd) set(seg, state, cause string, since time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.pairs {
		if p.Segment == seg {
			p.State, p.Desired, p.Cause, p.Since = state, state, cause, since
		}
	}
}

func hasEvent(evs []events.Event, kind, contains string) bool {
	for _, e := range evs {
		if e.Kind == kind && strings.Contains(e.Message, contains) {
			return true
		}
	}
	return false
}

// fixtureHardware is bypassd's probe of an FW-8865.
var fixtureHardware = bypassapi.HardwareProbe{
	NICs: []bypassapi.ProbedNIC{{PCI: "0000:03:00.0", ID: "8086:10fb"}, {PCI: "0000:05:00.0", ID: "8086:10d3", Subsystem: "1374:0001",
		Bypass: "Silicom NIC", Support: bypassapi.SupportNone}},
	SMBus:     []bypassapi.ProbedSMBus{{Bus: 0, Name: "SMBus I801 adapter at f000", Answers: []bypassapi.ProbedAddress{{Address: 0x73}}}},
	Watchdogs: []bypassapi.ProbedWatchdog{{Device: "/dev/watchdog0", Identity: "iTCO_wdt"}},
	Fits: []bypassapi.ProfileFit{{Profile: "fw-8865", Pair: "pair1", Backend: "lanner", Support: bypassapi.SupportDrivable, Found: true,
		Why: "i2c-0 answers at 0x73"}, {Profile: "iec-516p", Pair: "pair1", Backend: "superio", Support: bypassapi.SupportOperatorMap}},
}
