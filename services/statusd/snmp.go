package main

import (
	"context"
	"encoding/hex"
	"log"
	"net"
	"strconv"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web"
	"github.com/ncpos/ncpos/web/monitor"
	"github.com/ncpos/ncpos/web/snmp"
	"github.com/ncpos/ncpos/web/snmpview"
)

// startSNMP runs the agent on the management interface until ctx ends,
// and a notifier that sends the events put on queue that have a
// notification to the configured receivers (queue and notifier nil when
// there are none). done is closed once the agent has let go of its port.
func startSNMP(ctx context.Context, cfg config.SNMP, ifname string, mon *monitor.Monitor, engineFile string) (agent *snmp.Agent, n *snmp.Notifier, queue chan events.Event, done chan struct{}, err error) {
	id, boots, note, err := snmp.LoadEngine(engineFile)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if note != "" {
		log.Printf("SNMP: %s", note)
	}
	users := map[string]snmp.User{}
	var list []snmp.User
	for _, u := range cfg.Users {
		su := snmp.User{Name: u.Name, Auth: snmp.AuthProtocols[u.Auth], AuthKey: u.AuthKey, Priv: snmp.PrivProtocols[u.Priv], PrivKey: u.PrivKey}
		users[u.Name] = su
		list = append(list, su)
	}
	view := &snmpview.Views{Monitor: mon, Config: cfg, Start: time.Now()}
	agent, err = snmp.NewAgent(snmp.Config{Community: cfg.Community, Users: list, EngineID: id, Boots: boots, View: view.View})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var rs []snmp.Receiver
	for _, t := range cfg.Traps {
		r := snmp.Receiver{Addr: t.Target, Community: t.Community}
		if t.User != "" {
			u := users[t.User]
			r.User = &u
		}
		rs = append(rs, r)
	}
	if len(rs) > 0 {
		if n, err = snmp.NewNotifier(agent, rs); err != nil {
			return nil, nil, nil, nil, err
		}
		go n.Run(ctx)
		queue = make(chan events.Event, 64)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case e := <-queue:
					if trap, vars, ok := snmpview.Notification(e, mon.After(ctx, e.Time)); ok {
						n.Notify(trap, vars)
					}
				}
			}
		}()
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		serveSNMP(ctx, agent, ifname, cfg.Port)
	}()
	log.Printf("SNMP agent on %s udp port %d, engine ID %s (boots %d)", ifname, cfg.Port, hex.EncodeToString(id), boots)
	return agent, n, queue, done, nil
}

// serveSNMP listens on the management interface only (SO_BINDTODEVICE:
// a request that reached the box on a data port is not taken), retrying
// while the interface is not there yet.
func serveSNMP(ctx context.Context, agent *snmp.Agent, ifname string, port int) {
	for {
		pc, err := listenUDPOn(ctx, ifname, port)
		if err == nil {
			if err = agent.Serve(ctx, pc); err == nil {
				return
			}
		}
		log.Printf("SNMP: %v (trying again)", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

func listenUDPOn(ctx context.Context, ifname string, port int) (net.PacketConn, error) {
	lc := net.ListenConfig{Control: web.BindToDevice(ifname)}
	return lc.ListenPacket(ctx, "udp", ":"+strconv.Itoa(port))
}
