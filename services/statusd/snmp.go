package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/snmp"
	"github.com/ncpos/ncpos/web"
)

// SNMPEngineFile keeps the SNMP engine ID and how often the engine
// started on /perm: managers localize SNMPv3 keys to the engine ID and
// refuse a boots counter that went back (RFC 3414 2.2.2), so both must
// survive reboots and updates.
const SNMPEngineFile = "/perm/ncpos/snmp/engine.json"

type engineState struct {
	EngineID string `json:"engine_id"` // hex
	Boots    uint32 `json:"boots"`
}

// loadEngine reads the engine's state, making it on first use, and counts
// this start. Without a writable /perm the engine works for this boot with
// what it could read, and says so. A file that reads and does not parse is
// replaced; one that cannot be read (after a few tries) is left as it is,
// and the engine runs this boot with an ID of its own, since a new kept ID
// would change every user's localized keys for good (RFC 3414).
func loadEngine(file string) (id []byte, boots uint32, note string, err error) {
	var st engineState
	b, err := durable.ReadFile(file)
	switch {
	case err == nil:
		if jerr := json.Unmarshal(b, &st); jerr != nil {
			note = fmt.Sprintf("%s is corrupt (%v): a new engine ID", file, jerr)
			st = engineState{}
		} else if id, err = hex.DecodeString(st.EngineID); err != nil || len(id) < 5 || len(id) > 32 {
			note = fmt.Sprintf("%s holds no valid engine ID: a new one", file)
			st, id = engineState{}, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		if id, err = snmp.NewEngineID(32473); err != nil {
			return nil, 0, "", err
		}
		return id, 1, fmt.Sprintf("reading %s: %v: an engine ID for this boot only, the kept one is left as it is (managers must discover it again)", file, err), nil
	}
	if id == nil {
		if id, err = snmp.NewEngineID(32473); err != nil {
			return nil, 0, "", err
		}
		st.Boots = 0
	}
	st.EngineID, st.Boots = hex.EncodeToString(id), st.Boots+1
	out, _ := json.Marshal(st)
	if werr := os.MkdirAll(filepath.Dir(file), 0o700); werr == nil {
		werr = durable.WriteFile(file, append(out, '\n'), 0o600)
		if werr != nil {
			note = fmt.Sprintf("keeping the SNMP engine on %s: %v (managers must discover it again after a reboot)", file, werr)
		}
	} else {
		note = fmt.Sprintf("keeping the SNMP engine: %v (managers must discover it again after a reboot)", werr)
	}
	return id, st.Boots, note, nil
}

// startSNMP runs the agent on the management interface and sends the
// events that have a notification to the configured receivers.
func startSNMP(ctx context.Context, cfg config.SNMP, ifname string, mon *web.Monitor, evlog *events.Log, engineFile string) (*snmp.Agent, *snmp.Notifier, error) {
	id, boots, note, err := loadEngine(engineFile)
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
