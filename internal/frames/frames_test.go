package frames

import (
	"encoding/binary"
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
