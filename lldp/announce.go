package lldp

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
)

// Announcement is what the box says of itself on its management port,
// so that the switch it is plugged into can tell which box sits on which
// of its ports.
type Announcement struct {
	MAC               net.HardwareAddr // the port's: chassis ID (subtype 4) and source
	Ifname            string           // port ID (subtype 5, interface name)
	IfIndex           int              // the management addresses' interface number
	PortDescription   string
	SystemName        string
	SystemDescription string
	Addresses         []netip.Addr // management addresses, IPv4 and IPv6
	// TTL is how long the neighbour keeps this (seconds, at most
	// 65535); 0 is the shutdown LLDPDU of a port that stops.
	TTL int
}

// nearestBridge is the destination of LLDPDUs no bridge forwards
// (802.1AB-2016 7.1).
var nearestBridge = net.HardwareAddr{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}

// capStation is the "station only" capability (8.5.8.1): the management
// port of the box is an end station; the box bridges no frame of it.
const capStation = 1 << 7

// Frame is a's LLDP frame: chassis ID, port ID, TTL, port description,
// system name and description, system capabilities, one management
// address TLV per address, end.
func (a Announcement) Frame() []byte {
	f := make([]byte, 0, 256)
	f = append(f, nearestBridge...)
	f = append(f, a.MAC...)
	f = binary.BigEndian.AppendUint16(f, etherType)
	tlv := func(typ int, v ...[]byte) {
		n := 0
		for _, p := range v {
			n += len(p)
		}
		f = binary.BigEndian.AppendUint16(f, uint16(typ)<<9|uint16(n))
		for _, p := range v {
			f = append(f, p...)
		}
	}
	clip := func(s string) []byte { return []byte(s[:min(len(s), 255)]) }
	tlv(tlvChassisID, []byte{4}, a.MAC)
	tlv(tlvPortID, []byte{5}, clip(a.Ifname))
	tlv(tlvTTL, binary.BigEndian.AppendUint16(nil, uint16(min(max(a.TTL, 0), 65535))))
	if a.TTL > 0 {
		if a.PortDescription != "" {
			tlv(tlvPortDesc, clip(a.PortDescription))
		}
		if a.SystemName != "" {
			tlv(tlvSysName, clip(a.SystemName))
		}
		if a.SystemDescription != "" {
			tlv(tlvSysDesc, clip(a.SystemDescription))
		}
		caps := binary.BigEndian.AppendUint16(nil, capStation)
		tlv(tlvSysCaps, caps, caps)
		for _, ip := range a.Addresses {
			family := byte(1)
			if !ip.Is4() {
				family = 2
			}
			addr := ip.AsSlice()
			// Length of subtype and address, subtype, address, ifIndex
			// numbering (2), the interface, no OID.
			tlv(tlvMgmtAddress, []byte{byte(1 + len(addr)), family}, addr, []byte{2},
				binary.BigEndian.AppendUint32(nil, uint32(a.IfIndex)), []byte{0})
		}
	}
	tlv(tlvEnd)
	return f
}

// tlvSysCaps is the system capabilities TLV (8.5.8).
const tlvSysCaps = 7

// DefaultInterval is msgTxInterval's default (802.1AB-2016 9.2.5.7): one
// LLDPDU every 30 s, kept by the neighbour for four of them (msgTxHold).
const DefaultInterval = 30 * time.Second

// Announcer sends the box's announcement on one port at the standard
// interval, and at once when what it says changes (a new hostname or
// address); when it stops it sends the shutdown LLDPDU.
type Announcer struct {
	Ifname string
	// Describe is the box's name and description, read at each send.
	Describe func() (name, description string)
	// PortDescription describes the port, e.g. "MGMT, management".
	PortDescription string
	Interval        time.Duration // DefaultInterval when 0
	// Check is how often what it says is read again for a change (5 s
	// when 0).
	Check time.Duration
	Logf  func(format string, args ...any)
}

// announcement reads what the port and the box say now.
func (a *Announcer) announcement() (Announcement, error) {
	ifi, err := net.InterfaceByName(a.Ifname)
	if err != nil {
		return Announcement{}, fmt.Errorf("lldp: %w", err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return Announcement{}, fmt.Errorf("lldp: the addresses of %s: %w", a.Ifname, err)
	}
	an := Announcement{MAC: ifi.HardwareAddr, Ifname: a.Ifname, IfIndex: ifi.Index, PortDescription: a.PortDescription,
		TTL: int(4 * a.interval() / time.Second)}
	if a.Describe != nil {
		an.SystemName, an.SystemDescription = a.Describe()
	}
	for _, ad := range addrs {
		p, err := netip.ParsePrefix(ad.String())
		if err != nil || !p.Addr().IsGlobalUnicast() && !p.Addr().IsPrivate() {
			continue
		}
		an.Addresses = append(an.Addresses, p.Addr())
	}
	// IPv4 first, then IPv6, each in order: a switch shows the first.
	slices.SortStableFunc(an.Addresses, func(x, y netip.Addr) int {
		switch {
		case x.Is4() && !y.Is4():
			return -1
		case !x.Is4() && y.Is4():
			return 1
		}
		return x.Compare(y)
	})
	return an, nil
}

func (a *Announcer) interval() time.Duration {
	if a.Interval > 0 {
		return a.Interval
	}
	return DefaultInterval
}

// Run announces until ctx ends, then says goodbye. A port that is not
// there yet, or cannot be sent on, is tried again at the next check.
func (a *Announcer) Run(ctx context.Context) {
	logf := a.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	check := a.Check
	if check <= 0 {
		check = 5 * time.Second
	}
	var conn *packet.Conn
	var said []byte
	var sent time.Time
	var lastErr string
	fail := func(err error) {
		if err.Error() != lastErr {
			logf("%v", err)
			lastErr = err.Error()
		}
	}
	defer func() {
		if conn == nil {
			return
		}
		if an, err := a.announcement(); err == nil {
			an.TTL = 0
			conn.WriteTo(an.Frame(), &packet.Addr{HardwareAddr: nearestBridge})
		}
		conn.Close()
	}()
	tick := time.NewTicker(check)
	defer tick.Stop()
	for {
		an, err := a.announcement()
		if err != nil {
			fail(err)
		} else if f := an.Frame(); !slices.Equal(f, said) || time.Since(sent) >= a.interval() {
			if conn == nil {
				ifi, err := net.InterfaceByName(a.Ifname)
				if err == nil {
					// It only sends: a filter that takes no frame
					// leaves the neighbours' LLDPDUs out of its queue.
					conn, err = packet.Listen(ifi, packet.Raw, etherType, &packet.Config{Filter: []bpf.RawInstruction{{Op: 0x06}}})
				}
				if err != nil {
					fail(fmt.Errorf("lldp: a socket on %s: %w", a.Ifname, err))
				}
			}
			if conn != nil {
				if _, err := conn.WriteTo(f, &packet.Addr{HardwareAddr: nearestBridge}); err != nil {
					fail(fmt.Errorf("lldp: sending on %s: %w", a.Ifname, err))
					conn.Close()
					conn = nil
				} else {
					said, sent, lastErr = f, time.Now(), ""
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
