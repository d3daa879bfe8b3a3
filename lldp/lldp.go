// Package lldp reads the LLDP frames (IEEE 802.1AB) that reach a data
// port: who the neighbour at the other end of its cable is. The box never
// sends LLDP on a data port (a bump in the wire is not a hop) and forwards
// every LLDP frame unchanged; it only reads a copy. On its management
// port alone it announces itself (Announcer), as any managed device does.
//
// The frame format is IEEE 802.1AB-2016 clause 8: after the Ethernet
// header (EtherType 0x88CC) a sequence of TLVs, each a 7-bit type and a
// 9-bit length; Chassis ID (type 1), Port ID (2) and Time To Live (3)
// come first, in that order, and End Of LLDPDU (0) ends it. The
// management address TLV (8) is 8.5.9.
package lldp

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// etherType is LLDP's.
const etherType = 0x88cc

// TLV types (802.1AB-2016, Table 8-1).
const (
	tlvEnd         = 0
	tlvChassisID   = 1
	tlvPortID      = 2
	tlvTTL         = 3
	tlvPortDesc    = 4
	tlvSysName     = 5
	tlvSysDesc     = 6
	tlvMgmtAddress = 8
)

var tlvNames = map[int]string{tlvEnd: "end", tlvChassisID: "chassis ID", tlvPortID: "port ID", tlvTTL: "time to live",
	tlvPortDesc: "port description", tlvSysName: "system name", tlvSysDesc: "system description", 7: "system capabilities",
	tlvMgmtAddress: "management address", 127: "organizationally specific"}

// Neighbor is what one LLDP frame says of the station that sent it.
type Neighbor struct {
	// ChassisID and PortID identify the neighbour and its port (802.1AB's
	// MSAP identifier), rendered by their subtypes: a MAC address as
	// aa:bb:…, a network address as an IP, a name as text.
	ChassisID        string `json:"chassis_id"`
	ChassisIDSubtype int    `json:"chassis_id_subtype"`
	PortID           string `json:"port_id"`
	PortIDSubtype    int    `json:"port_id_subtype"`
	// TTL is how long the neighbour's information stays valid, in
	// seconds; 0 means it is leaving (a shutdown LLDPDU).
	TTL               int    `json:"ttl_seconds"`
	PortDescription   string `json:"port_description,omitempty"`
	SystemName        string `json:"system_name,omitempty"`
	SystemDescription string `json:"system_description,omitempty"`
	// ManagementAddress is the first management address the frame names.
	ManagementAddress string `json:"management_address,omitempty"`
}

// Decode reads an LLDP frame from its destination MAC address on. An
// error names what is wrong and where.
func Decode(frame []byte) (Neighbor, error) {
	var n Neighbor
	if len(frame) < 14 {
		return n, fmt.Errorf("lldp: a frame of %d bytes has no Ethernet header", len(frame))
	}
	if et := binary.BigEndian.Uint16(frame[12:14]); et != etherType {
		return n, fmt.Errorf("lldp: EtherType %#04x, want %#04x", et, etherType)
	}
	b := frame[14:]
	for i, off := 0, 14; ; i++ {
		if len(b) == 0 {
			if i < 3 {
				return n, fmt.Errorf("lldp: the frame ends after %d TLVs, before its chassis ID, port ID and time to live", i)
			}
			return n, nil // no End TLV: tolerated, as receivers do
		}
		if len(b) < 2 {
			return n, fmt.Errorf("lldp: TLV %d at byte %d: a header of %d byte, want 2", i+1, off, len(b))
		}
		typ, length := int(b[0]>>1), int(binary.BigEndian.Uint16(b[:2])&0x1ff)
		if 2+length > len(b) {
			return n, fmt.Errorf("lldp: TLV %d (%s) at byte %d: length %d runs past the frame's end (%d bytes left)", i+1, tlvName(typ), off, length, len(b)-2)
		}
		v := b[2 : 2+length]
		if want := []int{tlvChassisID, tlvPortID, tlvTTL}; i < 3 && typ != want[i] {
			return n, fmt.Errorf("lldp: TLV %d at byte %d is %s, want %s", i+1, off, tlvName(typ), tlvName(want[i]))
		}
		if i >= 3 && typ >= tlvChassisID && typ <= tlvTTL {
			return n, fmt.Errorf("lldp: TLV %d at byte %d is a second %s", i+1, off, tlvName(typ))
		}
		if err := n.take(typ, v); err != nil {
			return n, fmt.Errorf("lldp: TLV %d (%s) at byte %d: %w", i+1, tlvName(typ), off, err)
		}
		if typ == tlvEnd {
			return n, nil
		}
		b, off = b[2+length:], off+2+length
	}
}

func tlvName(typ int) string {
	if s, ok := tlvNames[typ]; ok {
		return s
	}
	return fmt.Sprintf("type %d", typ)
}

// take reads one TLV's value into n.
func (n *Neighbor) take(typ int, v []byte) error {
	switch typ {
	case tlvEnd:
		if len(v) != 0 {
			return fmt.Errorf("length %d, want 0", len(v))
		}
	case tlvChassisID, tlvPortID:
		// 8.5.2 and 8.5.3: a subtype and 1 to 255 bytes of ID.
		if len(v) < 2 || len(v) > 256 {
			return fmt.Errorf("length %d, want 2 to 256", len(v))
		}
		if typ == tlvChassisID {
			n.ChassisIDSubtype, n.ChassisID = int(v[0]), renderID(v[0], v[1:], 4, 5)
		} else {
			n.PortIDSubtype, n.PortID = int(v[0]), renderID(v[0], v[1:], 3, 4)
		}
	case tlvTTL:
		if len(v) != 2 {
			return fmt.Errorf("length %d, want 2", len(v))
		}
		n.TTL = int(binary.BigEndian.Uint16(v))
	case tlvPortDesc, tlvSysName, tlvSysDesc:
		// 8.5.5, 8.5.6, 8.5.7: 0 to 255 octets.
		if len(v) > 255 {
			return fmt.Errorf("length %d, want at most 255", len(v))
		}
		switch typ {
		case tlvPortDesc:
			n.PortDescription = text(v)
		case tlvSysName:
			n.SystemName = text(v)
		default:
			n.SystemDescription = text(v)
		}
	case tlvMgmtAddress:
		// 8.5.9: address string length (subtype and address, 2 to 32),
		// address subtype (an IANA address family), address, interface
		// numbering subtype, interface number (4), OID length, OID.
		if len(v) < 1 || int(v[0]) < 2 || int(v[0]) > 32 || 1+int(v[0])+5+1 > len(v) {
			return fmt.Errorf("management address of %d bytes does not hold its own fields", len(v))
		}
		if oid := int(v[1+int(v[0])+5]); oid > 128 || 1+int(v[0])+5+1+oid != len(v) {
			return fmt.Errorf("management address of %d bytes: its OID of %d bytes does not end the TLV", len(v), oid)
		}
		if n.ManagementAddress == "" {
			n.ManagementAddress = renderAddress(v[1], v[2:1+int(v[0])])
		}
	}
	return nil
}

// renderID renders a chassis or port ID: mac and network are the
// subtypes that hold a MAC address and a network address.
func renderID(subtype byte, id []byte, mac, network byte) string {
	switch {
	case subtype == mac && len(id) == 6:
		return net.HardwareAddr(id).String()
	case subtype == network && len(id) > 1:
		return renderAddress(id[0], id[1:])
	}
	return text(id)
}

// renderAddress renders an address of an IANA address family (1 IPv4,
// 2 IPv6, 6 an IEEE 802 MAC address).
func renderAddress(family byte, a []byte) string {
	switch {
	case family == 1 && len(a) == 4, family == 2 && len(a) == 16:
		ip, _ := netip.AddrFromSlice(a)
		return ip.String()
	case family == 6 && len(a) == 6:
		return net.HardwareAddr(a).String()
	}
	return text(a)
}

// text is b as text when it is printable UTF-8, else as hex.
func text(b []byte) string {
	s := string(b)
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return s
	}
	return hex.EncodeToString(b)
}

// WireID is a chassis ID (chassis true) or port ID as the frame carried
// it, from its subtype and its rendering in Neighbor: the bytes LLDP-MIB's
// lldpRemChassisId and lldpRemPortId hold (at most 255). A MAC or network
// address comes back as the frame's bytes, any other ID as its text.
func WireID(subtype int, id string, chassis bool) []byte {
	b := wireID(subtype, id, chassis)
	return b[:min(len(b), 255)]
}

func wireID(subtype int, id string, chassis bool) []byte {
	mac, network := 4, 5
	if !chassis {
		mac, network = 3, 4
	}
	switch subtype {
	case mac:
		if hw, err := net.ParseMAC(id); err == nil {
			return hw
		}
	case network:
		if ip, err := netip.ParseAddr(id); err == nil {
			if ip.Is4() {
				return append([]byte{1}, ip.AsSlice()...)
			}
			return append([]byte{2}, ip.AsSlice()...)
		}
	}
	// The other subtypes are names (SnmpAdminString): text, as read.
	return []byte(id)
}
