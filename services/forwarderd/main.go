// Command forwarderd is the ncpos datapath daemon: it bridges the ports of
// each segment with XDP (or AF_XDP) and reports on
// /run/ncpos/forwarderd.sock (GET /livez, /health, /status, /metrics).
//
// Init starts it as /user/forwarderd. With no flags it runs on the
// configuration init chose for this boot (/run/ncpos/config.toml) and maps the segments'
// front-panel ports to interfaces through the platform profile. Flags:
//
//	-config PATH       read this configuration file instead
//	-segment N=IFA,IFB bridge kernel interfaces IFA and IFB as segment N
//	                   (repeatable; replaces the configuration's segments,
//	                   as the lab does with namespace veths)
//	-ports L=IF,...    front-panel names' interfaces, instead of the platform
//	                   profile's (the lab's veths have no PCI address)
//	-engine xdp|afxdp  override forwarder.engine
//	-mode forward|service
//	                   override forwarder.mode
//	-cores N           override forwarder.cores (0 = all but one)
//	-flow-table-size N override forwarder.flow_table_size
//	-flow-idle D       idle time after which a flow expires (120s)
//	-flow-sweep D      how often the flow table is swept (5s)
//	-xdp-mode M        override forwarder.xdp_mode: auto, native or generic
//	-interval D        heartbeat and sampling period (1s)
//
// POST /reconfigure reads the configuration again and takes it in place
// (forwarder.Reconfigure): segments whose settings did not change are not
// touched. It answers what it did (forwarderapi.Reconfigured); 422 when
// the configuration does not load.
//
// Killing it, even with SIGKILL, detaches every program it attached (they
// hang on BPF links owned by the process); the segment then passes nothing
// until bypassd engages the relay or forwarderd is restarted.
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

	"github.com/ncpos/ncpos/appliance"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
)

type segmentFlags []forwarder.Segment

func (s *segmentFlags) String() string { return fmt.Sprint(*s) }
func (s *segmentFlags) Set(v string) error {
	seg, err := forwarder.ParseSegmentFlag(v)
	if err != nil {
		return err
	}
	*s = append(*s, seg)
	return nil
}

func main() {
	logs.Setup("forwarderd")
	var segs segmentFlags
	var (
		cfgPath   = flag.String("config", "", "configuration file (default: the one that takes effect on the appliance)")
		engine    = flag.String("engine", "", "override forwarder.engine: xdp or afxdp")
		mode      = flag.String("mode", "", "override forwarder.mode: forward or service")
		cores     = flag.Int("cores", -1, "override forwarder.cores (0 = all but one)")
		flowSize  = flag.Int("flow-table-size", 0, "override forwarder.flow_table_size")
		flowIdle  = flag.Duration("flow-idle", forwarder.DefaultFlowIdle, "idle time after which a flow expires")
		flowSweep = flag.Duration("flow-sweep", 5*time.Second, "how often the flow table is swept")
		xdpMode   = flag.String("xdp-mode", "", "override forwarder.xdp_mode: auto, native or generic")
		interval  = flag.Duration("interval", time.Second, "heartbeat and sampling period")
		mtu       = flag.Int("mtu", 0, "MTU of the -segment segments (default: config.DefaultMTU)")
		noCapture = flag.Bool("no-capture", false, "build the port programs without the capture hook (to weigh its cost in a bench); captures are refused")
	)
	ports := flag.String("ports", "", "front-panel names' interfaces `LAN1=ifA,LAN2=ifB,...` instead of the platform profile's")
	flag.Var(&segs, "segment", "bridge `name=ifA,ifB` (repeatable; replaces the configuration's segments)")
	flag.Parse()

	var portMap map[string]string
	if *ports != "" {
		var err error
		if portMap, err = forwarder.ParsePortsFlag(*ports); err != nil {
			log.Fatalf("forwarderd: -ports: %v", err)
		}
	}
	// load reads the configuration and the flags that override it: at
	// start and on every reconfigure.
	load := func() (forwarder.Options, error) {
		opts, err := options(*cfgPath, segs, portMap)
		if err != nil {
			return opts, err
		}
		if *engine != "" {
			opts.Engine = *engine
		}
		if *mode != "" {
			opts.Mode = *mode
		}
		if *cores >= 0 {
			opts.Cores = *cores
		}
		if *flowSize > 0 {
			opts.FlowTableSize = *flowSize
		}
		if *mtu > 0 && len(segs) > 0 {
			for i := range opts.Segments {
				opts.Segments[i].MTU = *mtu
			}
		}
		if *xdpMode != "" {
			opts.XDPMode = *xdpMode
		}
		opts.FlowIdle, opts.SweepInterval, opts.Interval = *flowIdle, *flowSweep, *interval
		opts.NoCapture = *noCapture
		return opts, nil
	}
	opts, err := load()
	if err != nil {
		log.Fatalf("forwarderd: %v", err)
	}
	stopped, err := run(opts, load)
	if err != nil {
		log.Fatalf("forwarderd: %v", err)
	}
	if stopped {
		// Not 0: gokrazy starts it again unless it is shutting down
		// (see ipc.ExitStopped).
		log.Printf("forwarderd: stopped")
		os.Exit(ipc.ExitStopped)
	}
}

// options builds the forwarder's options from the configuration, with the
// -segment flags replacing its segments when given, and ports (-ports)
// naming the interfaces of its front-panel names when given.
func options(cfgPath string, segs []forwarder.Segment, ports map[string]string) (forwarder.Options, error) {
	cfg, err := appliance.DaemonConfig(cfgPath)
	if err != nil {
		return forwarder.Options{}, err
	}
	opts := forwarder.Options{
		Engine:        cfg.Forwarder.Engine,
		Mode:          cfg.Forwarder.Mode,
		Cores:         cfg.Forwarder.Cores,
		FlowTableSize: cfg.Forwarder.FlowTableSize,
		FlowControl:   cfg.Forwarder.FlowControl,
		XDPMode:       cfg.Forwarder.XDPMode,
		Segments:      segs,
	}
	if len(segs) == 0 {
		var s []forwarder.Segment
		var absent []forwarder.AbsentSegment
		if ports != nil {
			s, absent, err = forwarder.SegmentsOnPorts(cfg, ports, "not given with -ports")
		} else {
			s, absent, err = forwarder.SegmentsFromConfig(cfg, config.SysClassNet)
		}
		if err != nil {
			return opts, err
		}
		for _, a := range absent {
			log.Printf("segment %s not bridged: ports %v not on this box (%s)", a.Name, a.Missing, a.Why)
		}
		opts.Segments, opts.Absent = s, absent
	}
	return opts, nil
}

// run forwards until SIGTERM (stopped) or a failure; load reads the
// configuration again for a reconfigure.
func run(opts forwarder.Options, load func() (forwarder.Options, error)) (stopped bool, err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	f, err := forwarder.Start(opts)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st := f.Status()
	for _, p := range st.Ports {
		log.Printf("port %s (%s) -> %s: %s %s", p.Name, p.Interface, p.Peer, st.Engine, p.Attach)
	}
	var plan []string
	for _, p := range st.Cores.Ports {
		for _, q := range p.Queues {
			plan = append(plan, fmt.Sprintf("%s/q%d->cpu%d", p.Interface, q.Queue, q.CPU))
		}
	}
	log.Printf("%s mode; forwarding cpus %v; %s", st.Mode, st.Cores.Forwarding, strings.Join(plan, " "))

	go f.Run(ctx)
	mux := ipc.Handler(f.Report, func() any { return f.Status() }, f.MetricsHandler())
	mux.HandleFunc("POST /reconfigure", func(w http.ResponseWriter, r *http.Request) {
		next, err := load()
		if err != nil {
			http.Error(w, "reading the configuration: "+err.Error(), http.StatusUnprocessableEntity)
			return
		}
		res, err := f.Reconfigure(next)
		log.Printf("reconfigured in %.1f ms: kept %v, detached %v, attached %v, failed %v, engine restarted %v",
			res.TookMS, res.Kept, res.Detached, res.Attached, res.Failed, res.Restarted)
		if err != nil {
			res.Error = err.Error()
			log.Printf("reconfiguring: %v", err)
		}
		ipc.WriteJSON(w, res)
	})
	mux.HandleFunc("GET /capture", f.CaptureHandler())
	if err := ipc.Serve(ctx, ipc.Dir(), forwarderapi.Name, mux); err != nil {
		return false, err
	}
	return ctx.Err() != nil, nil
}
