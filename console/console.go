// Package console is the box's setup menu on its physical consoles (the
// serial port and the VGA console), where a field technician with a
// console cable starts: pressing Enter shows the box's addresses, TLS
// fingerprint and build, and lets them set the management address,
// reset the ncpos password, restore the factory defaults or reboot. It
// never opens a shell. Physical presence at the console is the trust,
// as on every network appliance's console menu; each change goes
// through the same configuration path as one from afar (checked,
// planned, recorded in the history and as an event), by "console".
package console

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/ncpos/ncpos/config"
)

// About is what the menu shows of the box.
type About struct {
	Hostname, Build string
	Fingerprint     string // the TLS key's, as the host commands pin it
	Port, Interface string // the management port: its label and interface
	Addresses       []string
}

// Box is what the menu does; statusd gives it its own.
type Box interface {
	About() About
	// Management is the management settings in force.
	Management() (config.Management, error)
	// SetManagement applies m through the configuration path, made by
	// the console device, and says what happened.
	SetManagement(ctx context.Context, m config.Management, device string) (string, error)
	// ResetPassword gives the ncpos account a new random password and
	// returns it.
	ResetPassword(device string) (string, error)
	// FactoryReset forgets the configurations, their history and the
	// accounts (and the box's TLS key with newKey), then reboots.
	FactoryReset(device string, newKey bool) error
	Reboot(device string) error
}

// Menu serves one console device.
type Menu struct {
	Box    Box
	Device string // e.g. "ttyS0"
}

// session is one run of the menu on a console.
type session struct {
	ctx context.Context
	m   *Menu
	in  *bufio.Scanner
	out io.Writer
}

// Serve answers on rw until ctx ends or the console closes: every line
// typed while no menu is open shows it.
func (m *Menu) Serve(ctx context.Context, rw io.ReadWriter) error {
	s := &session{ctx: ctx, m: m, in: bufio.NewScanner(rw), out: rw}
	for ctx.Err() == nil {
		if !s.in.Scan() {
			return s.in.Err()
		}
		s.menu()
	}
	return ctx.Err()
}

func (s *session) say(format string, args ...any) { fmt.Fprintf(s.out, format+"\n", args...) }

// ask prompts and reads one line; false when the console closed.
func (s *session) ask(prompt string) (string, bool) {
	fmt.Fprint(s.out, prompt)
	if !s.in.Scan() {
		return "", false
	}
	return strings.TrimSpace(s.in.Text()), true
}

func (s *session) yes(prompt string) bool {
	a, ok := s.ask(prompt + " [y/N] ")
	return ok && (a == "y" || a == "Y" || strings.EqualFold(a, "yes"))
}

// menu shows the box and the choices until the technician leaves.
func (s *session) menu() {
	for s.ctx.Err() == nil {
		s.show()
		s.say("")
		s.say("  1) Management IPv4 by DHCP")
		s.say("  2) Management IPv4 static address")
		s.say("  3) Management IPv6: SLAAC, static or off")
		s.say("  4) Reset the ncpos password")
		s.say("  5) Restore factory defaults")
		s.say("  6) Reboot")
		s.say("  0) Leave this menu")
		choice, ok := s.ask("Choice: ")
		if !ok {
			return
		}
		switch choice {
		case "0", "":
			s.say("Press Enter for the menu.")
			return
		case "1":
			s.change(func(m *config.Management) bool { m.DHCP, m.Address, m.Gateway = true, "", ""; return true })
		case "2":
			s.change(s.staticV4)
		case "3":
			s.change(s.ipv6)
		case "4":
			s.resetPassword()
		case "5":
			s.factoryReset()
		case "6":
			if s.yes("Reboot the box now?") {
				if err := s.m.Box.Reboot(s.m.Device); err != nil {
					s.say("Not rebooted: %v", err)
				} else {
					s.say("Rebooting.")
					return
				}
			}
		default:
			s.say("%q is not a choice.", choice)
		}
	}
}

// show says what the box is and where it answers.
func (s *session) show() {
	a := s.m.Box.About()
	s.say("")
	s.say("ncpos %s, build %s", a.Hostname, a.Build)
	s.say("  TLS key %s", cmp.Or(a.Fingerprint, "(not made yet)"))
	addrs := "no address"
	if len(a.Addresses) > 0 {
		addrs = strings.Join(a.Addresses, ", ")
	}
	s.say("  %s (%s): %s", cmp.Or(a.Port, "management port"), cmp.Or(a.Interface, "not found"), addrs)
	for _, ad := range a.Addresses {
		if p, err := netip.ParsePrefix(ad); err == nil && !p.Addr().IsLinkLocalUnicast() {
			host := p.Addr().String()
			if p.Addr().Is6() {
				host = "[" + host + "]"
			}
			s.say("  https://%s/", host)
		}
	}
}

// change edits the management settings in force with edit and applies
// them once the technician agrees.
func (s *session) change(edit func(*config.Management) bool) {
	m, err := s.m.Box.Management()
	if err != nil {
		s.say("The configuration in force does not read: %v", err)
		return
	}
	if !edit(&m) {
		return
	}
	s.say("New management setup: %s", describe(m))
	if !s.yes("Apply it?") {
		s.say("Nothing changed.")
		return
	}
	said, err := s.m.Box.SetManagement(s.ctx, m, s.m.Device)
	if err != nil {
		s.say("Not applied: %v", err)
		return
	}
	s.say("%s", said)
}

// describe is a management setup in a line.
func describe(m config.Management) string {
	v4 := "IPv4 by DHCP"
	if !m.DHCP {
		v4 = "IPv4 " + m.Address
		if m.Gateway != "" {
			v4 += " via " + m.Gateway
		}
	}
	v6 := "IPv6 " + m.IPv6
	if m.IPv6 == config.IPv6Static {
		v6 = "IPv6 " + m.Address6
		if m.Gateway6 != "" {
			v6 += " via " + m.Gateway6
		}
	}
	return v4 + ", " + v6
}

func (s *session) staticV4(m *config.Management) bool {
	addr, ok := s.ask("IPv4 address with its prefix length (e.g. 192.0.2.10/24): ")
	if !ok || addr == "" {
		return false
	}
	p, err := netip.ParsePrefix(addr)
	if err != nil || !p.Addr().Is4() {
		s.say("%q is not an IPv4 address with a prefix length.", addr)
		return false
	}
	gw, ok := s.ask("Default gateway (empty for none): ")
	if !ok {
		return false
	}
	m.DHCP, m.Address, m.Gateway = false, p.String(), gw
	return true
}

func (s *session) ipv6(m *config.Management) bool {
	mode, ok := s.ask("IPv6: slaac, static or off? ")
	if !ok {
		return false
	}
	switch mode {
	case config.IPv6Slaac, config.IPv6Off:
		m.IPv6, m.Address6, m.Gateway6 = mode, "", ""
		return true
	case config.IPv6Static:
	default:
		s.say("%q is neither slaac, static nor off.", mode)
		return false
	}
	addr, ok := s.ask("IPv6 address with its prefix length (e.g. 2001:db8::10/64): ")
	if !ok || addr == "" {
		return false
	}
	gw, ok := s.ask("Default gateway (e.g. fe80::1; empty for none): ")
	if !ok {
		return false
	}
	m.IPv6, m.Address6, m.Gateway6 = config.IPv6Static, addr, gw
	return true
}

func (s *session) resetPassword() {
	if !s.yes("Give the ncpos account a new password? The old one stops working at once.") {
		return
	}
	pw, err := s.m.Box.ResetPassword(s.m.Device)
	if err != nil {
		s.say("Not reset: %v", err)
		return
	}
	s.say("The new password of ncpos, shown this once:")
	s.say("")
	s.say("    %s", pw)
	s.say("")
}

func (s *session) factoryReset() {
	if !s.yes("Forget the configuration, its history and the accounts, and reboot on the image's configuration?") {
		return
	}
	newKey := s.yes("Also make a new TLS key? Hosts that pinned this box's key must then pin the new one.")
	if err := s.m.Box.FactoryReset(s.m.Device, newKey); err != nil {
		s.say("Not restored: %v", err)
		return
	}
	s.say("Factory defaults restored; rebooting.")
}
