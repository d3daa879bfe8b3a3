package lldp

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/frames"
)

// tlv encodes one TLV (802.1AB-2016 8.4: 7-bit type, 9-bit length).
func tlv(typ int, v ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(typ)<<9|uint16(len(v)))
	return append(b, v...)
}

// frame is an LLDP frame to the nearest-bridge group carrying tlvs.
func frame(tlvs ...[]byte) []byte {
	return frames.Ethernet(frames.LLDPGroup, frames.MACA, etherType, bytes.Join(tlvs, nil))
}

// lldpdFrame is what Debian's lldpd sends by default: its chassis by MAC
// address, its port by name, a TTL of 120 s, the port's, the system's
// name and description, and an IPv4 management address.
func lldpdFrame(ttl int) []byte {
	mgmt := append([]byte{5, 1, 192, 0, 2, 7}, 2, 0, 0, 0, 3, 0) // length, IPv4, address, ifIndex 3, no OID
	return frame(
		tlv(tlvChassisID, 4, 0x52, 0x54, 0, 0x12, 0x34, 0x56),
		tlv(tlvPortID, append([]byte{5}, "eth1"...)...),
		tlv(tlvTTL, byte(ttl>>8), byte(ttl)),
		tlv(tlvSysName, []byte("neighbour-a")...),
		tlv(tlvSysDesc, []byte("Debian GNU/Linux 12 (bookworm)")...),
		tlv(tlvPortDesc, []byte("uplink to ncpos")...),
		tlv(7, 0, 0x14, 0, 0x14), // system capabilities: skipped
		tlv(tlvMgmtAddress, mgmt...),
		tlv(127, 0, 0x12, 0x0f, 1, 0, 0, 0, 0, 0), // organizationally specific: skipped
		tlv(tlvEnd),
	)
}

func TestDecode(t *testing.T) {
	n, err := Decode(lldpdFrame(120))
	if err != nil {
		t.Fatal(err)
	}
	want := Neighbor{ChassisID: "52:54:00:12:34:56", ChassisIDSubtype: 4, PortID: "eth1", PortIDSubtype: 5, TTL: 120,
		PortDescription: "uplink to ncpos", SystemName: "neighbour-a", SystemDescription: "Debian GNU/Linux 12 (bookworm)",
		ManagementAddress: "192.0.2.7"}
	if n != want {
		t.Errorf("Decode = %+v\nwant       %+v", n, want)
	}

	// A chassis by network address, a port by MAC, a binary name, and
	// no End TLV (tolerated).
	n, err = Decode(frame(
		tlv(tlvChassisID, 5, 2, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1),
		tlv(tlvPortID, 3, 0x02, 0, 0, 0, 0, 0x0b),
		tlv(tlvTTL, 0, 30),
		tlv(tlvSysName, 0xff, 0x01)))
	if err != nil || n.ChassisID != "2001:db8::1" || n.PortID != "02:00:00:00:00:0b" || n.SystemName != "ff01" || n.TTL != 30 {
		t.Errorf("Decode = %+v, %v", n, err)
	}
}

// TestDecodeMalformed: every malformed frame gets an error naming what
// is wrong and where; none panics (FuzzDecode tries more).
func TestDecodeMalformed(t *testing.T) {
	chassis := tlv(tlvChassisID, 4, 1, 2, 3, 4, 5, 6)
	port := tlv(tlvPortID, 7, 'p')
	ttl := tlv(tlvTTL, 0, 120)
	for _, c := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"short", []byte{1, 2, 3}, "no Ethernet header"},
		{"not LLDP", frames.Ethernet(frames.LLDPGroup, frames.MACA, 0x0800, make([]byte, 46)), "EtherType 0x0800"},
		{"the wire set's", frames.Ethernet(frames.LLDPGroup, frames.MACA, etherType, bytes.Repeat([]byte{0xaa}, 46)), "TLV 1 (type 85) at byte 14: length 170 runs past the frame's end"},
		{"port first", frame(port, chassis, ttl), "TLV 1 at byte 14 is port ID, want chassis ID"},
		{"no TTL", frame(chassis, port, tlv(tlvSysName, 'x')), "TLV 3 at byte 27 is system name, want time to live"},
		{"ends early", frame(chassis, port), "ends after 2 TLVs"},
		{"past the end", append(frame(chassis, port, ttl), 0x0a, 0xff, 'x'), "TLV 4 (system name) at byte 31: length 255 runs past the frame's end (1 bytes left)"},
		{"empty chassis", frame(tlv(tlvChassisID, 4), port, ttl), "TLV 1 (chassis ID) at byte 14: length 1, want 2 to 256"},
		{"long TTL", frame(chassis, port, tlv(tlvTTL, 0, 0, 120)), "TLV 3 (time to live) at byte 27: length 3, want 2"},
		{"half a header", append(frame(chassis, port, ttl), 0x0a), "TLV 4 at byte 31: a header of 1 byte, want 2"},
		{"bad management address", frame(chassis, port, ttl, tlv(tlvMgmtAddress, 40, 1, 192, 0, 2, 1)), "management address of 6 bytes"},
		{"end with a value", frame(chassis, port, ttl, tlv(tlvEnd, 1)), "TLV 4 (end) at byte 31: length 1, want 0"},
		{"a second chassis ID", frame(chassis, port, ttl, chassis), "TLV 4 at byte 31 is a second chassis ID"},
		{"a long system name", frame(chassis, port, ttl, tlv(tlvSysName, make([]byte, 256)...)), "TLV 4 (system name) at byte 31: length 256, want at most 255"},
		{"an OID past the management address", frame(chassis, port, ttl, tlv(tlvMgmtAddress, 5, 1, 192, 0, 2, 7, 2, 0, 0, 0, 3, 9, 1)), "its OID of 9 bytes"},
	} {
		_, err := Decode(c.frame)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(lldpdFrame(120))
	f.Add(frame(tlv(tlvChassisID, 4, 1, 2, 3, 4, 5, 6), tlv(tlvPortID, 5, 'x'), tlv(tlvTTL, 0, 0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		Decode(b) // never panics, whatever it is given
	})
}

// TestTable: neighbours are kept by port and identity, refreshed, aged
// out by their TTL, removed by a shutdown LLDPDU (TTL 0), and a port's
// table is bounded.
func TestTable(t *testing.T) {
	var tab Table
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	a, _ := Decode(lldpdFrame(120))
	b := a
	b.ChassisID, b.TTL = "52:54:00:00:00:0b", 30
	tab.Update("LAN2", a, nil, t0)
	tab.Update("LAN1", a, nil, t0)
	tab.Update("LAN1", b, nil, t0)
	names := func(now time.Time) string {
		var s []string
		for _, n := range tab.Neighbors(now) {
			s = append(s, n.Port+" "+n.ChassisID)
		}
		return strings.Join(s, ", ")
	}
	if got := names(t0); got != "LAN1 52:54:00:12:34:56, LAN1 52:54:00:00:00:0b, LAN2 52:54:00:12:34:56" {
		t.Errorf("neighbours: %s", got)
	}
	if got := names(t0.Add(30 * time.Second)); got != "LAN1 52:54:00:12:34:56, LAN2 52:54:00:12:34:56" {
		t.Errorf("after b's TTL of 30 s: %s", got)
	}
	tab.Update("LAN1", a, nil, t0.Add(100*time.Second)) // refreshed
	if got := names(t0.Add(130 * time.Second)); got != "LAN1 52:54:00:12:34:56" {
		t.Errorf("after LAN2's neighbour aged out: %s", got)
	}
	if s := tab.Neighbors(t0.Add(130 * time.Second)); s[0].Expires != t0.Add(220*time.Second) || s[0].SystemName != "neighbour-a" {
		t.Errorf("refreshed: %+v", s[0])
	}
	gone := a
	gone.TTL = 0
	tab.Update("LAN1", gone, nil, t0.Add(131*time.Second))
	if got := names(t0.Add(131 * time.Second)); got != "" {
		t.Errorf("after a shutdown LLDPDU: %q", got)
	}

	// A full port keeps the neighbours it has, with their indexes, and
	// drops the newcomers, counting them: frames forged to fill it
	// cannot push out the real neighbour (a, heard first, with the
	// shortest TTL), however many and however long their TTLs.
	real := a
	real.ChassisID, real.TTL = "real", 30
	src := net.HardwareAddr{0x52, 0x54, 0, 0, 0, 0x01}
	if !tab.Update("LAN3", real, src, t0) {
		t.Fatal("the first neighbour of an empty port was not kept")
	}
	for i := range MaxPerPort + 3 {
		n := a
		n.ChassisID, n.TTL = string(rune('a'+i)), 100+i
		kept := tab.Update("LAN3", n, net.HardwareAddr{0x02, 0, 0, 0, 0, byte(i)}, t0.Add(time.Duration(i)*time.Millisecond))
		if kept != (i < MaxPerPort-1) {
			t.Errorf("newcomer %d of a port with %d neighbours kept: %v", i, i+1, kept)
		}
	}
	kept := tab.Neighbors(t0.Add(time.Second))
	if len(kept) != MaxPerPort || tab.Drops("LAN3") != 4 || tab.Drops("LAN1") != 0 || kept[0].ChassisID != "real" || kept[0].Index != 1 ||
		kept[MaxPerPort-1].ChassisID != "o" || kept[MaxPerPort-1].Index != MaxPerPort || !bytes.Equal(kept[0].Source, src) {
		t.Errorf("a port hearing %d neighbours keeps %d (first %+v, last %+v) and dropped %d, want %d from real (index 1) to o, and 4",
			MaxPerPort+4, len(kept), kept[0], kept[len(kept)-1], tab.Drops("LAN3"), MaxPerPort)
	}
	// The real neighbour refreshes while the port is full.
	if !tab.Update("LAN3", real, src, t0.Add(20*time.Second)) {
		t.Errorf("a neighbour the full port keeps was not refreshed")
	}
	// Once one ages out, a newcomer takes its place, numbered anew.
	if kept := tab.Neighbors(t0.Add(51 * time.Second)); len(kept) != MaxPerPort-1 || kept[0].ChassisID != "a" {
		t.Errorf("after real's TTL: %+v", kept)
	}
	late := a
	late.ChassisID = "late"
	if !tab.Update("LAN3", late, src, t0.Add(51*time.Second)) {
		t.Errorf("a newcomer was not kept once the port had room")
	}
	if kept := tab.Neighbors(t0.Add(51 * time.Second)); kept[len(kept)-1].ChassisID != "late" || kept[len(kept)-1].Index != MaxPerPort+1 {
		t.Errorf("the newcomer after an ageout: %+v", kept[len(kept)-1])
	}
	tab.Forget(func(port string) bool { return port == "LAN3" })
	if got := tab.Neighbors(t0); len(got) != 0 || tab.Drops("LAN3") != 0 {
		t.Errorf("after LAN3 was forgotten: %+v, %d dropped", got, tab.Drops("LAN3"))
	}
	// Another subtype is another identity, though it reads the same.
	c := a
	c.ChassisIDSubtype = 7
	tab.Update("LAN4", a, nil, t0)
	tab.Update("LAN4", c, nil, t0)
	if got := tab.Neighbors(t0); len(got) != 2 || got[0].Index != 1 || got[1].Index != 2 {
		t.Errorf("two subtypes of one ID: %+v", got)
	}
}

// TestWireID gives back the bytes a frame carried for the binary subtypes
// (MAC and network addresses) and the text of names.
func TestWireID(t *testing.T) {
	for _, c := range []struct {
		subtype int
		id      string
		chassis bool
		want    []byte
	}{
		{4, "52:54:00:12:34:56", true, []byte{0x52, 0x54, 0, 0x12, 0x34, 0x56}},
		{3, "02:00:00:00:00:0b", false, []byte{2, 0, 0, 0, 0, 0x0b}},
		{5, "192.0.2.7", true, []byte{1, 192, 0, 2, 7}},
		{4, "2001:db8::1", false, append([]byte{2, 0x20, 0x01, 0x0d, 0xb8}, make([]byte, 12)...)},
		{5, "eth1", false, []byte("eth1")},
		{7, "sw-core-1", true, []byte("sw-core-1")},
	} {
		got := WireID(c.subtype, c.id, c.chassis)
		if c.subtype == 4 && !c.chassis {
			c.want[16] = 1
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("WireID(%d, %q, %v) = %x, want %x", c.subtype, c.id, c.chassis, got, c.want)
		}
	}
}
