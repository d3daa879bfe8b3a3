package forwarder_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/internal/frames"
)

// reasons lists the names of the bits set in mask.
func reasons(mask uint32) []string {
	var out []string
	for i, name := range forwarder.MalformedReasons {
		if mask&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

func TestParseFrameMalformed(t *testing.T) {
	for _, c := range frames.MalformedCases() {
		t.Run(c.Name, func(t *testing.T) {
			got := reasons(forwarder.ParseFrame(c.Frame).Malformed)
			if !slices.Equal(got, c.Reasons) {
				t.Errorf("reasons = %v, want %v", got, c.Reasons)
			}
		})
	}
}

func TestParseFrameKeys(t *testing.T) {
	ip6Frag := make([]byte, 8)
	ip6Frag[0] = 17 // next: UDP
	ip6FragLater := append([]byte(nil), ip6Frag...)
	binary.BigEndian.PutUint16(ip6FragLater[2:], 185<<3)
	v4Frag := frames.IPv4(frames.AddrA, frames.AddrB, 17, make([]byte, 40))
	binary.BigEndian.PutUint16(v4Frag[6:], 100) // offset 800
	hbh := make([]byte, 8)
	hbh[0] = 6 // next: TCP

	tests := []struct {
		name  string
		frame []byte
		want  forwarder.FlowKey
		flags uint8
	}{
		{"udp4", frames.UDPFrame(64, 1234, 53), key4(17, 1234, 53), 0},
		{"tcp4_syn", frames.Pad(frames.Ethernet(frames.MACB, frames.MACA, 0x0800, frames.IPv4(frames.AddrA, frames.AddrB, 6, frames.TCP(40000, 443, 0x02, nil))), 60), key4(6, 40000, 443), 0x02},
		{"tcp4_vlan_qinq", frames.VLAN(frames.Ethernet(frames.MACB, frames.MACA, 0x0800, frames.IPv4(frames.AddrA, frames.AddrB, 6, frames.TCP(1, 2, 0x18, nil))), 5, 6), key4(6, 1, 2), 0x18},
		{"icmp4_echo", frames.Ethernet(frames.MACB, frames.MACA, 0x0800, frames.IPv4(frames.AddrA, frames.AddrB, 1, frames.ICMPEcho(8, 77, 1, make([]byte, 32)))), key4(1, 77, 8<<8), 0},
		{"ipv4_later_fragment", frames.Ethernet(frames.MACB, frames.MACA, 0x0800, v4Frag), key4(17, 0, 0), 0},
		{"udp6", frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, frames.IPv6(frames.Addr6A, frames.Addr6B, 17, frames.UDP(5000, 6000, nil))), key6(17, 5000, 6000), 0},
		{"icmp6_echo", frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, frames.IPv6(frames.Addr6A, frames.Addr6B, 58, frames.ICMPEcho(128, 9, 1, nil))), key6(58, 9, 128<<8), 0},
		{"tcp6_hopbyhop", frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, frames.IPv6(frames.Addr6A, frames.Addr6B, 0, append(hbh, frames.TCP(7, 8, 0x10, nil)...))), key6(6, 7, 8), 0x10},
		{"udp6_first_fragment", frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, frames.IPv6(frames.Addr6A, frames.Addr6B, 44, append(ip6Frag, frames.UDP(3, 4, nil)...))), key6(17, 3, 4), 0},
		{"udp6_later_fragment", frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, frames.IPv6(frames.Addr6A, frames.Addr6B, 44, append(ip6FragLater, make([]byte, 16)...))), key6(17, 0, 0), 0},
		{"gre4_address_pair", frames.Ethernet(frames.MACB, frames.MACA, 0x0800, frames.IPv4(frames.AddrA, frames.AddrB, 47, make([]byte, 30))), key4(47, 0, 0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := forwarder.ParseFrame(tt.frame)
			if p.Malformed != 0 {
				t.Fatalf("malformed: %v", reasons(p.Malformed))
			}
			if !p.HasKey {
				t.Fatal("no flow key")
			}
			if p.Key != tt.want {
				t.Errorf("key = %+v, want %+v", p.Key, tt.want)
			}
			if p.TCPFlags != tt.flags {
				t.Errorf("tcp flags = %#x, want %#x", p.TCPFlags, tt.flags)
			}
		})
	}
	for _, f := range [][]byte{frames.ARPRequest(), frames.Ethernet(frames.MACB, frames.MACA, 0x88cc, make([]byte, 46))} {
		if p := forwarder.ParseFrame(f); p.HasKey || p.Malformed != 0 {
			t.Errorf("non-IP frame %x: %+v, want no key and not malformed", f[12:14], p)
		}
	}
}

func key4(proto uint8, sport, dport uint16) forwarder.FlowKey {
	return flowKey(4, proto, frames.AddrA, frames.AddrB, sport, dport)
}

func key6(proto uint8, sport, dport uint16) forwarder.FlowKey {
	return flowKey(6, proto, frames.Addr6A, frames.Addr6B, sport, dport)
}

func flowKey(family, proto uint8, src, dst netip.Addr, sport, dport uint16) forwarder.FlowKey {
	k := forwarder.FlowKey{Family: family, Proto: proto, SrcPort: sport, DstPort: dport}
	if family == 4 {
		s, d := src.As4(), dst.As4()
		copy(k.Src[:], s[:])
		copy(k.Dst[:], d[:])
	} else {
		k.Src, k.Dst = src.As16(), dst.As16()
	}
	return k
}

// seedFrames are valid and broken frames of every kind the parser knows,
// the starting corpus of the fuzz test and of the BPF comparison.
func seedFrames() [][]byte {
	var out [][]byte
	for _, c := range frames.MalformedCases() {
		out = append(out, c.Frame)
	}
	hbh := make([]byte, 8)
	hbh[0] = 44
	frag := make([]byte, 8)
	frag[0] = 6
	out = append(out,
		frames.ARPRequest(),
		frames.UDPFrame(64, 1, 2),
		frames.Ethernet(frames.MACB, frames.MACA, 0x0800, frames.IPv4(frames.AddrA, frames.AddrB, 6, frames.TCP(1, 2, 0x12, nil))),
		frames.Ethernet(frames.MACB, frames.MACA, 0x0800, frames.IPv4(frames.AddrA, frames.AddrB, 1, frames.ICMPEcho(0, 3, 4, nil))),
		frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, frames.IPv6(frames.Addr6A, frames.Addr6B, 0, append(append(hbh, frag...), frames.TCP(1, 2, 0x01, nil)...))),
		frames.VLAN(frames.Ethernet(frames.MACB, frames.MACA, 0x86dd, frames.IPv6(frames.Addr6A, frames.Addr6B, 58, frames.ICMPEcho(129, 1, 1, nil))), 4000),
	)
	return out
}

// mutate returns n frames derived from seeds by truncation and byte flips,
// deterministic so that a failure can be reproduced.
func mutate(seeds [][]byte, n int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, 0, n)
	for len(out) < n {
		f := slices.Clone(seeds[r.IntN(len(seeds))])
		for k := r.IntN(4); k >= 0; k-- {
			switch r.IntN(3) {
			case 0:
				f = f[:max(14, r.IntN(len(f)+1))]
			default:
				// Flip bytes in the headers, where the parser looks.
				i := r.IntN(min(len(f), 80))
				f[i] = byte(r.Uint32())
			}
		}
		out = append(out, f)
	}
	return out
}

func FuzzParseFrame(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := forwarder.ParseFrame(b)
		if (len(b) < 60) != (p.Malformed&forwarder.MalRunt != 0) {
			t.Errorf("runt bit %v for a %d-byte frame", p.Malformed&forwarder.MalRunt != 0, len(b))
		}
		if p.Malformed>>len(forwarder.MalformedReasons) != 0 {
			t.Errorf("unknown malformation bits %#x", p.Malformed)
		}
		if p.HasKey && p.Key.Family != 4 && p.Key.Family != 6 {
			t.Errorf("key with family %d", p.Key.Family)
		}
		if !p.HasKey && (p.Key != forwarder.FlowKey{}) {
			t.Errorf("key set without HasKey: %+v", p.Key)
		}
	})
}
