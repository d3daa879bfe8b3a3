package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ncpos/ncpos/internal/frames"
)

// Test frames are Ethernet/IPv4/UDP, from 198.18.0.0/16 to 198.19.0.0/16
// (the range RFC 2544 reserves for benchmarks), with a stamp at the start
// of the UDP payload:
//
//	0  magic   uint16  0x4e42 ("NB")
//	2  trial   uint16  which trial sent it (late frames of an earlier trial are not counted)
//	4  seq     uint32  per stream, from 0
//	8  time    uint64  nanoseconds on the sender's clock (Clock)
//	16 stream  uint16  which stream (direction, segment) sent it
//
// 18 bytes fit the smallest frame: 64 bytes with FCS are 60 on the wire
// side of the NIC, 42 of them headers.
const (
	magic       = 0x4e42
	headerLen   = 14 + 20 + 8
	stampLen    = 18
	StampOffset = headerLen
	fcsLen      = 4
)

// Stamp is what a test frame carries.
type Stamp struct {
	Trial  uint16
	Seq    uint32
	Time   uint64
	Stream uint16
}

// FrameSpec describes the frames of one stream.
type FrameSpec struct {
	Size     int // with FCS, as RFC 2544 counts; the frame built is Size-4 bytes
	Flows    int // distinct address and port combinations, cycled frame by frame; 1 when 0
	SrcMAC   [6]byte
	DstMAC   [6]byte
	Stream   uint16 // varies the addresses too, so streams never share a flow
	Reversed bool   // from 198.19 to 198.18, for the other direction
}

// Builder writes the frames of a stream: headers per flow are made once,
// each frame costs a copy of 42 bytes and the stamp.
type Builder struct {
	spec    FrameSpec
	headers [][]byte
}

// NewBuilder prepares the frames of spec.
func NewBuilder(spec FrameSpec) (*Builder, error) {
	if err := CheckSize(spec.Size, true); err != nil {
		return nil, err
	}
	if spec.Flows <= 0 {
		spec.Flows = 1
	}
	if spec.Flows > 1<<16 {
		return nil, fmt.Errorf("%d flows: at most 65536", spec.Flows)
	}
	b := &Builder{spec: spec}
	for i := 0; i < spec.Flows; i++ {
		b.headers = append(b.headers, header(spec, i))
	}
	return b, nil
}

// flowAddrs gives flow i's addresses and ports: sources and destinations
// vary in their last two bytes, ports over 1024-... and 7-....
func flowAddrs(spec FrameSpec, i int) (src, dst [4]byte, sport, dport uint16) {
	s := uint16(spec.Stream)
	src = [4]byte{198, 18, byte(s<<4) | byte(i>>12&0x0f), byte(i >> 4)}
	dst = [4]byte{198, 19, byte(s<<4) | byte(i>>8&0x0f), byte(i)}
	sport = 1024 + uint16(i)
	dport = 7 + uint16(i%16)
	if spec.Reversed {
		src, dst = dst, src
		sport, dport = dport, sport
	}
	return
}

func header(spec FrameSpec, flow int) []byte {
	src, dst, sport, dport := flowAddrs(spec, flow)
	udp := frames.UDP(sport, dport, make([]byte, spec.Size-fcsLen-headerLen))
	f := frames.Ethernet(spec.DstMAC, spec.SrcMAC, 0x0800, frames.IPv4(netip.AddrFrom4(src), netip.AddrFrom4(dst), 17, udp))
	return f[:headerLen]
}

// Len is the length of each frame as handed to the NIC (no FCS).
func (b *Builder) Len() int { return b.spec.Size - fcsLen }

// Flows is the number of flows cycled.
func (b *Builder) Flows() int { return len(b.headers) }

// Write puts frame number seq of the stream into buf (at least Len bytes,
// whose bytes after the stamp are left as they are: the caller zeroes them
// once) and returns the frame.
func (b *Builder) Write(buf []byte, trial uint16, seq uint32, now uint64) []byte {
	f := buf[:b.Len()]
	copy(f, b.headers[int(seq%uint32(len(b.headers)))])
	PutStamp(f, Stamp{Trial: trial, Seq: seq, Time: now, Stream: b.spec.Stream})
	return f
}

// PutStamp writes st into a frame.
func PutStamp(f []byte, st Stamp) {
	p := f[StampOffset:]
	binary.BigEndian.PutUint16(p[0:], magic)
	binary.BigEndian.PutUint16(p[2:], st.Trial)
	binary.BigEndian.PutUint32(p[4:], st.Seq)
	binary.BigEndian.PutUint64(p[8:], st.Time)
	binary.BigEndian.PutUint16(p[16:], st.Stream)
}

var errNotTest = errors.New("not a test frame")

// ParseStamp reads the stamp of a test frame; frames that are not IPv4
// UDP test frames are an error.
func ParseStamp(f []byte) (Stamp, error) {
	if len(f) < StampOffset+stampLen || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14] != 0x45 || f[23] != 17 {
		return Stamp{}, errNotTest
	}
	p := f[StampOffset:]
	if binary.BigEndian.Uint16(p) != magic {
		return Stamp{}, errNotTest
	}
	return Stamp{
		Trial:  binary.BigEndian.Uint16(p[2:]),
		Seq:    binary.BigEndian.Uint32(p[4:]),
		Time:   binary.BigEndian.Uint64(p[8:]),
		Stream: binary.BigEndian.Uint16(p[16:]),
	}, nil
}
