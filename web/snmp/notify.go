package snmp

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"net"
	"sync/atomic"

	"github.com/gosnmp/gosnmp"
)

// Receiver is where notifications go: SNMPv2c with Community, or SNMPv3
// authPriv as User when User is set. An SNMPv3 trap is sent by the box's
// engine, so the receiver must know the user under the box's engine ID.
type Receiver struct {
	Addr      string // host:port
	Community string
	User      *User
}

// Notifier sends SNMPv2 traps to every receiver. Sending never blocks the
// caller: notifications wait in a queue and the oldest are dropped, and
// counted, when receivers are slower than events.
type Notifier struct {
	agent                 *Agent
	recv                  []receiver
	queue                 chan []gosnmp.SnmpPDU
	Sent, Dropped, Failed atomic.Uint64
}

type receiver struct {
	Receiver
	sp *gosnmp.UsmSecurityParameters // keys localized to the box's engine
}

var snmpTrapOID0 = mustOID("1.3.6.1.6.3.1.1.4.1.0")

// NewNotifier checks the receivers and localizes their users' keys.
func NewNotifier(a *Agent, rs []Receiver) (*Notifier, error) {
	n := &Notifier{agent: a, queue: make(chan []gosnmp.SnmpPDU, 64)}
	for _, r := range rs {
		if _, _, err := net.SplitHostPort(r.Addr); err != nil {
			return nil, fmt.Errorf("SNMP trap receiver %q: %w", r.Addr, err)
		}
		rc := receiver{Receiver: r}
		if r.User != nil {
			sp, err := r.User.params(a.engineID)
			if err != nil {
				return nil, fmt.Errorf("SNMP trap receiver %s: %w", r.Addr, err)
			}
			rc.sp = sp
		}
		n.recv = append(n.recv, rc)
	}
	return n, nil
}

// Notify queues the notification trap with its variables.
func (n *Notifier) Notify(trap OID, vars []Var) {
	pdus := []gosnmp.SnmpPDU{
		{Name: SysUpTime.Append(0).String(), Type: gosnmp.TimeTicks, Value: n.agent.sysUpTime()},
		{Name: snmpTrapOID0.String(), Type: gosnmp.ObjectIdentifier, Value: trap.String()},
	}
	for _, v := range vars {
		pdus = append(pdus, pdu(v))
	}
	for {
		select {
		case n.queue <- pdus:
			return
		default:
		}
		select {
		case <-n.queue:
			n.Dropped.Add(1)
		default:
		}
	}
}

// Run sends queued notifications until ctx is done.
func (n *Notifier) Run(ctx context.Context) error {
	conn, err := net.ListenPacket("udp", ":0")
	if err != nil {
		return fmt.Errorf("SNMP notifications: %w", err)
	}
	defer conn.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case pdus := <-n.queue:
			for _, r := range n.recv {
				if err := n.send(conn, r, pdus); err != nil {
					n.Failed.Add(1)
					log.Printf("statusd: SNMP trap to %s: %v", r.Addr, err)
					continue
				}
				n.Sent.Add(1)
			}
		}
	}
}

func (n *Notifier) send(conn net.PacketConn, r receiver, pdus []gosnmp.SnmpPDU) error {
	p := &gosnmp.SnmpPacket{PDUType: gosnmp.SNMPv2Trap, RequestID: requestID(), Variables: pdus}
	if r.sp == nil {
		p.Version, p.Community = gosnmp.Version2c, r.Community
	} else {
		a := n.agent
		sp := r.sp.Copy().(*gosnmp.UsmSecurityParameters)
		sp.AuthoritativeEngineBoots, sp.AuthoritativeEngineTime = a.boots, a.engineTime()
		salt := make([]byte, 8)
		rand.Read(salt)
		sp.PrivacyParameters = salt
		p.Version, p.MsgFlags, p.SecurityModel, p.SecurityParameters = gosnmp.Version3, gosnmp.AuthPriv, gosnmp.UserSecurityModel, sp
		p.MsgID, p.ContextEngineID, p.MsgMaxSize = requestID(), string(a.engineID), 65507
	}
	b, err := p.MarshalMsg()
	if err != nil {
		return err
	}
	addr, err := net.ResolveUDPAddr("udp4", r.Addr)
	if err != nil {
		return err
	}
	_, err = conn.WriteTo(b, addr)
	return err
}
