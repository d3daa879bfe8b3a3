package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/snmptest"
	"github.com/ncpos/ncpos/internal/syslogtest"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web"
	"github.com/ncpos/ncpos/web/monitor"
)

// lineForward is statusd's log as on the box: every line it logs goes to
// the collector, whose forward is the outputs'.
type lineForward struct{ o *outputs }

func (w lineForward) Write(p []byte) (int, error) {
	w.o.forwardLine(ipc.LogLine{Daemon: "statusd", PID: 1, Time: time.Now(), Text: string(bytes.TrimSpace(p))})
	return len(p), nil
}

// TestOutputsInPlace: syslog and the SNMP agent follow the configuration
// in force. A new community answers and the old one does not, on the same
// port; a new syslog target gets the events from then on; settings that
// did not change keep the agent as it was. statusd logs while it takes a
// configuration, and those lines come back to the outputs, as on the box.
func TestOutputsInPlace(t *testing.T) {
	testenv.NeedRoot(t, testenv.Lab, "binding SNMP to the loopback interface")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evlog := events.NewLog(0)
	o := &outputs{ctx: ctx, ifname: "lo", engineFile: filepath.Join(t.TempDir(), "snmp-engine"), evlog: evlog}
	evlog.AddSink(o)
	prev := log.Writer()
	log.SetOutput(lineForward{o})
	defer log.SetOutput(prev)
	o.attach(&monitor.Monitor{Collector: &monitor.Collector{Root: t.TempDir(), RunDir: t.TempDir()}, Config: config.Default()}, &web.Server{})

	first, second := syslogtest.Listen(t, "udp"), syslogtest.Listen(t, "udp")
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	cfg := config.Default()
	cfg.Syslog.Target = first.Target()
	cfg.SNMP.Port, cfg.SNMP.Community = port, "noc-read-old"
	done := make(chan error, 1)
	go func() { done <- o.take(cfg) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("taking a configuration did not return: statusd's own log lines wait for it")
	}
	sysName := func(community string) error {
		_, err := snmptest.Tool(t, "snmpget", "-v2c", "-c", community, "-t", "1", "-r", "2", fmt.Sprintf("udp:127.0.0.1:%d", port), "1.3.6.1.2.1.1.5.0")
		return err
	}
	if err := sysName("noc-read-old"); err != nil {
		t.Fatalf("the first community: %v", err)
	}
	evlog.Addf(events.Notice, events.KindConfig, nil, "first event")

	next := *cfg
	next.Syslog.Target = second.Target()
	next.SNMP.Community = "noc-read-new"
	if err := o.take(&next); err != nil {
		t.Fatal(err)
	}
	if err := sysName("noc-read-new"); err != nil {
		t.Errorf("the new community: %v", err)
	}
	if err := sysName("noc-read-old"); err == nil {
		t.Error("the old community still answers")
	}
	evlog.Addf(events.Notice, events.KindConfig, nil, "second event")
	wait := func(r *syslogtest.Receiver, re *regexp.Regexp) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if r.Count(re) > 0 {
				return true
			}
		}
		return false
	}
	if !wait(first, regexp.MustCompile("first event")) || !wait(second, regexp.MustCompile("second event")) {
		t.Errorf("syslog: the first target got %q, the second %q", first.All(), second.All())
	}
	if wait(first, regexp.MustCompile("second event")) {
		t.Error("the old syslog target still gets events")
	}
	if !wait(second, regexp.MustCompile(regexp.QuoteMeta("SNMP agent on lo udp port"))) {
		t.Errorf("statusd's own lines did not reach syslog: %q", second.All())
	}
	// The same settings again keep the agent.
	agent := o.agent
	if err := o.take(&next); err != nil || o.agent != agent {
		t.Errorf("the same settings again: %v, agent kept %v", err, o.agent == agent)
	}
}
