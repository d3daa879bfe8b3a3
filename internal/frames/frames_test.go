package frames

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestUDPFrame checks the bytes a receiver relies on: the size asked for,
// the EtherType, a valid IPv4 header checksum and the lengths.
func TestUDPFrame(t *testing.T) {
	f := UDPFrame(100, 1000, 2000)
	if len(f) != 100 {
		t.Fatalf("%d bytes, want 100", len(f))
	}
	if binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14] != 0x45 || f[23] != 17 {
		t.Errorf("not IPv4/UDP: %x", f[:24])
	}
	if Checksum(f[14:34]) != 0 {
		t.Errorf("IPv4 header checksum does not verify: %x", f[14:34])
	}
	if got := binary.BigEndian.Uint16(f[16:]); got != 86 {
		t.Errorf("IPv4 total length %d, want 86", got)
	}
	if got := binary.BigEndian.Uint16(f[38:]); got != 66 {
		t.Errorf("UDP length %d, want 66", got)
	}
	if v := VLAN(f, 100, 200); len(v) != 108 || binary.BigEndian.Uint16(v[12:]) != 0x8100 || binary.BigEndian.Uint16(v[14:])&0xfff != 100 {
		t.Errorf("VLAN: %x", v[:20])
	}
}

func TestWireFrames(t *testing.T) {
	fs := WireFrames(9000)
	for name, size := range map[string]int{"qinq_1522": 1522, "qinq_1526": 1526, "vlan_1518": 1518, "jumbo": 9000, "lacp": 124, "stp": 60, "pause": 60} {
		if len(fs[name]) != size {
			t.Errorf("%s is %d bytes, want %d", name, len(fs[name]), size)
		}
	}
	if q := fs["qinq_1522"]; q[12] != 0x88 || q[13] != 0xa8 || q[16] != 0x81 || q[17] != 0x00 {
		t.Errorf("qinq tags: % x, want 88 a8 then 81 00", q[12:18])
	}
	ns := fs["ipv6_nd"]
	// The checksum over the pseudo-header and message, as sent, is 0.
	ip := ns[14:]
	src, _ := netip.AddrFromSlice(ip[8:24])
	dst, _ := netip.AddrFromSlice(ip[24:40])
	if c := ICMPv6Checksum(src, dst, ip[40:]); c != 0 {
		t.Errorf("neighbour solicitation checksum verifies to %#x, want 0", c)
	}
	if ns[0] != 0x33 || ns[1] != 0x33 || ns[5] != 0x0b {
		t.Errorf("solicited-node MAC % x", ns[:6])
	}
}

func TestTCPSYNChecksums(t *testing.T) {
	for _, addrs := range [][2]netip.Addr{{AddrA, AddrB}, {Addr6A, Addr6B}} {
		f := TCPSYN(MACB, MACA, addrs[0], addrs[1], 40000, 80)
		var seg []byte
		var pseudo []byte
		s, d := addrs[0].AsSlice(), addrs[1].AsSlice()
		if addrs[0].Is4() {
			seg = f[14+20 : 14+40]
			pseudo = append(append(append([]byte(nil), s...), d...), 0, 6, 0, 20)
			if Checksum(f[14:34]) != 0 {
				t.Errorf("IPv4 header checksum does not verify")
			}
		} else {
			seg = f[14+40:]
			pseudo = append(append(append([]byte(nil), s...), d...), 0, 0, 0, 20, 0, 0, 0, 6)
		}
		if c := Checksum(append(pseudo, seg...)); c != 0 {
			t.Errorf("%v: TCP checksum verifies to %#x, want 0", addrs[0], c)
		}
		if seg[13] != 0x02 {
			t.Errorf("flags %#x, want SYN", seg[13])
		}
	}
	if a := ARPWhoHas(MACA, AddrA, AddrB); len(a) != 60 || !bytes.Equal(a, ARPRequest()) {
		t.Errorf("ARPWhoHas differs from ARPRequest")
	}
}
