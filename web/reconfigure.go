package web

import (
	"errors"
	"fmt"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/web/snmp"
)

// Reconfigure takes a new configuration's settings for the pages and the
// API in place: the segments and ports shown, whether reading needs the
// password, the control password, the names the box answers to and the
// self-test's cabling. A password setting that does not load (a bad
// hash, a box left with none) refuses all of statusd's part, before any
// of it is taken, and the change is then reverted as not taken: a change
// that locks the operator out is never kept.
func (s *Server) Reconfigure(cfg *config.Config) error {
	if s.Auth.Password == nil {
		return errors.New("this server checks no password")
	}
	pw, err := LoadPassword(cfg.Status, s.Auth.Password.keptIn())
	if err != nil {
		return fmt.Errorf("control password: %w", err)
	}
	s.Auth.Password.takeFrom(pw)
	s.Auth.setAuthRead(cfg.Status.AuthRead)
	s.Auth.UseRADIUS(cfg.Auth, cfg.Hostname)
	s.guard().hosts.setNames(cfg.Status.Names)
	s.Monitor.SetConfig(cfg)
	return nil
}

// keptIn is the file a rotated password is kept in.
func (p *Password) keptIn() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.file
}

// takeFrom makes n's hash, source and rotation rule p's: the old
// password stops working at once.
func (p *Password) takeFrom(n *Password) {
	p.change.Lock()
	defer p.change.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if string(p.hash) != string(n.hash) {
		p.goodOK = false
	}
	p.hash, p.source, p.fixed = n.hash, n.source, n.fixed
}

// setNames replaces status.names.
func (hc *hostCheck) setNames(names []string) {
	var normal []string
	for _, n := range names {
		normal = append(normal, normalName(n))
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.names = normal
}

// SetOutputs replaces the syslog sender and the SNMP agent and notifier
// whose counters /metrics shows (nil: none), when a new configuration
// starts new ones.
func (s *Server) SetOutputs(syslog *events.Sender, agent *snmp.Agent, notifier *snmp.Notifier) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.Syslog, s.SNMP, s.SNMPNotifier = syslog, agent, notifier
}

// outputs are the syslog sender, SNMP agent and notifier in force.
func (s *Server) outputs() (*events.Sender, *snmp.Agent, *snmp.Notifier) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return s.Syslog, s.SNMP, s.SNMPNotifier
}
