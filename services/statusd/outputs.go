package main

import (
	"context"
	"log"
	"os"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/logs"
	"github.com/ncpos/ncpos/web"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/snmp"
)

// outputs are what statusd sends and serves besides its pages, as the
// configuration says: events and the daemons' log lines to syslog, and
// the SNMP agent with its notifications. It is the event log's sink and
// the collector's forward for the whole run; what it passes them on to
// follows the configuration in force, so that a new syslog target or SNMP
// community takes effect without a restart of statusd. A part whose
// settings did not change keeps running as it was.
type outputs struct {
	ctx        context.Context // statusd's
	ifname     string
	engineFile string
	evlog      *events.Log

	// in is what events and log lines go to now: read without a lock,
	// since what takes a new configuration logs while it holds mu, and
	// its lines come back here.
	in atomic.Pointer[sinks]

	mu       sync.Mutex       // one take at a time; guards what follows
	mon      *monitor.Monitor // set (attach) before the SNMP agent starts
	srv      *web.Server      // told of new senders and agents, once set
	syslogAt config.Syslog
	hostname string // in the sender's messages
	stopLog  context.CancelFunc
	snmpAt   *config.SNMP // nil: not started
	agent    *snmp.Agent
	stopSNMP context.CancelFunc
	snmpDone chan struct{} // closed when the agent has let go of its port
}

// sinks are where events and log lines go.
type sinks struct {
	sender   *events.Sender    // nil: no syslog
	forward  func(ipc.LogLine) // the daemons' lines to syslog
	notifier *snmp.Notifier    // nil: no notifications
	queue    chan events.Event // the notifier's
}

// now is what events and log lines go to now.
func (o *outputs) now() sinks {
	if s := o.in.Load(); s != nil {
		return *s
	}
	return sinks{}
}

// Send passes an event on to syslog and to the SNMP notifications.
func (o *outputs) Send(e events.Event) {
	s := o.now()
	if s.sender != nil {
		s.sender.Send(e)
	}
	if s.queue != nil {
		// The notification is made from the monitor's snapshot after the
		// event; the queue never blocks the event log.
		select {
		case s.queue <- e:
		default:
			s.notifier.Dropped.Add(1)
		}
	}
}

// forwardLine passes a daemon's log line on to syslog.
func (o *outputs) forwardLine(l ipc.LogLine) {
	if f := o.now().forward; f != nil {
		f(l)
	}
}

// takeSyslog starts the sender cfg names (none for no target), stopping
// the one before, unless the settings and the hostname are the same.
func (o *outputs) takeSyslog(cfg config.Syslog) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	hostname, _ := os.Hostname()
	if o.stopLog != nil && cfg == o.syslogAt && hostname == o.hostname {
		return nil
	}
	var sender *events.Sender
	if cfg.Target != "" {
		var err error
		sender, err = events.NewSender(cfg.Target, events.Header{Hostname: hostname, AppName: "ncpos", ProcID: strconv.Itoa(os.Getpid())}, []byte(cfg.CA))
		if err != nil {
			return err
		}
	}
	if o.stopLog != nil {
		o.stopLog()
	}
	ctx, stop := context.WithCancel(o.ctx)
	o.syslogAt, o.hostname, o.stopLog = cfg, hostname, stop
	in := o.now()
	in.sender, in.forward = sender, nil
	if sender != nil {
		go sender.Run(ctx)
		in.forward = logs.ToSyslog(sender, hostname)
	}
	o.in.Store(&in)
	o.tellServer()
	if sender != nil {
		log.Printf("events and log lines go to syslog %s", cfg.Target)
	}
	return nil
}

// takeSNMP starts the agent and notifier cfg describes (none when SNMP is
// off), stopping the ones before first, unless the settings are the same.
func (o *outputs) takeSNMP(cfg config.SNMP) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.snmpAt != nil && reflect.DeepEqual(*o.snmpAt, cfg) {
		return nil
	}
	in := o.now()
	if o.stopSNMP != nil {
		in.notifier, in.queue = nil, nil
		o.in.Store(&in)
		o.stopSNMP()
		<-o.snmpDone // the port is free for the new agent
		o.agent, o.stopSNMP = nil, nil
	}
	o.snmpAt = &cfg
	if cfg.Enabled() {
		ctx, stop := context.WithCancel(o.ctx)
		agent, n, queue, done, err := startSNMP(ctx, cfg, o.ifname, o.mon, o.engineFile)
		if err != nil {
			stop()
			o.tellServer()
			return err
		}
		o.agent, o.stopSNMP, o.snmpDone = agent, stop, done
		in.notifier, in.queue = n, queue
		o.in.Store(&in)
	}
	o.tellServer()
	return nil
}

// attach names the monitor the SNMP agent serves and the server whose
// /metrics counts the outputs.
func (o *outputs) attach(mon *monitor.Monitor, srv *web.Server) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mon, o.srv = mon, srv
	o.tellServer()
}

// take takes a new configuration's syslog and SNMP settings.
func (o *outputs) take(cfg *config.Config) error {
	if err := o.takeSyslog(cfg.Syslog); err != nil {
		return err
	}
	return o.takeSNMP(cfg.SNMP)
}

// tellServer hands the server what /metrics counts (o.mu held).
func (o *outputs) tellServer() {
	if o.srv != nil {
		in := o.now()
		o.srv.SetOutputs(in.sender, o.agent, in.notifier)
	}
}
