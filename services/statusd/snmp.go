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
	"github.com/ncpos/ncpos/snmp"
	"github.com/ncpos/ncpos/web"
)

// startSNMP runs the agent on the management interface and sends the
// events that have a notification to the configured receivers.
func startSNMP(ctx context.Context, cfg config.SNMP, ifname string, mon *web.Monitor, evlog *events.Log, engineFile string) (*snmp.Agent, *snmp.Notifier, error) {
	id, boots, note, err := snmp.LoadEngine(engineFile)
	if err != nil {
		return nil, nil, err
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
	view := &web.SNMPView{Monitor: mon, Config: cfg, Start: time.Now()}
	agent, err := snmp.NewAgent(snmp.Config{Community: cfg.Community, Users: list, EngineID: id, Boots: boots, View: view.View})
	if err != nil {
		return nil, nil, err
	}
	go serveSNMP(ctx, agent, ifname, cfg.Port)
	log.Printf("SNMP agent on %s udp port %d, engine ID %s (boots %d)", ifname, cfg.Port, hex.EncodeToString(id), boots)
	if len(cfg.Traps) == 0 {
		return agent, nil, nil
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
	n, err := snmp.NewNotifier(agent, rs)
	if err != nil {
		return nil, nil, err
	}
	go n.Run(ctx)
	// Events are logged while the monitor takes a snapshot, so the sink
	// only queues them; the notification is made from the snapshot after.
	queue := make(chan events.Event, 64)
	evlog.AddSink(eventQueue{queue, n})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-queue:
				if trap, vars, ok := web.Notification(e, mon.Latest(ctx)); ok {
					n.Notify(trap, vars)
				}
			}
		}
	}()
	return agent, n, nil
}

// eventQueue is an events.Sink that never blocks: when the queue is full
// the event is not notified, and counted with the notifier's drops.
type eventQueue struct {
	q chan events.Event
	n *snmp.Notifier
}

func (q eventQueue) Send(e events.Event) {
	select {
	case q.q <- e:
	default:
		q.n.Dropped.Add(1)
	}
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
