package pcapng

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// blk is a block of type typ in byte order bo around body, which must be
// padded to 32 bits already.
func blk(bo binary.AppendByteOrder, typ uint32, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	out := bo.AppendUint32(nil, typ)
	out = bo.AppendUint32(out, uint32(12+len(b)))
	out = append(out, b...)
	return bo.AppendUint32(out, uint32(12+len(b)))
}

// opt is an option, padded.
func opt(bo binary.AppendByteOrder, code uint16, v ...byte) []byte {
	b := bo.AppendUint16(nil, code)
	b = bo.AppendUint16(b, uint16(len(v)))
	return append(append(b, v...), make([]byte, pad(len(v)))...)
}

// fields are 32-bit fields in byte order bo.
func fields(bo binary.AppendByteOrder, vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = bo.AppendUint32(b, v)
	}
	return b
}

var be = binary.BigEndian

// TestBigEndian reads a section as a big-endian machine writes it, with
// what the Writer never writes: a minor version of 2, timestamps in
// binary fractions with an offset, flags beyond the direction, blocks of
// other types; then a little-endian section, whose interfaces are
// numbered anew.
func TestBigEndian(t *testing.T) {
	var stream []byte
	add := func(b ...[]byte) { stream = append(stream, bytes.Join(b, nil)...) }
	add(blk(be, typeSHB, fields(be, byteOrderMagic, 1<<16|2, math.MaxUint32, math.MaxUint32), opt(be, shbOS, []byte("SunOS 5.11")...), opt(be, 0)))
	add(blk(be, 4, opt(be, 1, 192, 0, 2, 1, 'h', 0), opt(be, 0))) // a name resolution block: skipped
	add(blk(be, 0x80000bad, []byte("ours")))                      // a local block type: skipped
	add(blk(be, typeIDB, fields(be, 1<<16, 1000), opt(be, ifName, []byte("ge0")...), opt(be, ifTSResol, 0x80|20),
		opt(be, ifTSOffset, be.AppendUint64(nil, 1000)...), opt(be, ifDescription, []byte("up\x00link")...))) // no end of options
	add(blk(be, typeEPB, fields(be, 0, 0, 3<<20|1<<19, 3, 4), []byte{1, 2, 3, 0},
		opt(be, epbFlags, fields(be, 2|3<<2|1<<24)...), opt(be, epbVerdict, be.AppendUint64([]byte{2}, XDPTX)...), opt(be, epbQueue, 0, 0, 0, 5), opt(be, 0)))
	add(blk(be, typeISB, fields(be, 0, 0, 10<<20), opt(be, isbStartTime, fields(be, 0, 1<<20)...), opt(be, isbIfRecv, be.AppendUint64(nil, 7)...), opt(be, 0)))
	little := newSample()
	add(little.write(t)...)

	rd, err := NewReader(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if rd.Section().OS != "SunOS 5.11" {
		t.Errorf("section %+v", rd.Section())
	}
	var got []Block
	for range 4 {
		b, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	want := []Block{
		&InterfaceBlock{Interface: Interface{Name: "ge0", Description: "up", SnapLen: 1000}, LinkType: 1, TSResol: 0x80 | 20, TSOffset: 1000},
		&PacketBlock{Packet{Time: time.Unix(1003, 5e8).UTC(), Data: []byte{1, 2, 3}, OrigLen: 4, Direction: Outbound,
			Verdicts: []Verdict{{Type: VerdictXDP, Value: XDPTX}}, Queue: new(uint32(5))}},
		&StatsBlock{Stats{Time: time.Unix(1010, 0).UTC(), Start: time.Unix(1001, 0).UTC(), Received: new(uint64(7))}},
		&InterfaceBlock{Interface: Interface{Name: "LAN1", Description: "first data port"}, LinkType: 1, TSResol: 9},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			t.Errorf("block %d: %+v", i, got[i])
		}
	}
	if rd.Section() != little.section {
		t.Errorf("second section %+v", rd.Section())
	}
}

func TestTimestamps(t *testing.T) {
	for _, tt := range []struct {
		resol  uint8
		offset int64
		units  uint64
		want   time.Time
	}{
		{6, 0, 1_500_000, time.Unix(1, 5e8)}, // the default: microseconds
		{9, 0, 1_500_000_001, time.Unix(1, 500_000_001)},
		{0, 0, 5, time.Unix(5, 0)},
		{3, 0, 1500, time.Unix(1, 5e8)},
		{12, 0, 1_500_000_000_999, time.Unix(1, 5e8)},
		{19, 0, 15e18, time.Unix(1, 5e8)},
		{20, 0, 15e18, time.Unix(0, 15e7)},
		{28, 0, 1e19, time.Unix(0, 1)},
		{29, 0, 1e19, time.Unix(0, 0)},
		{127, 0, math.MaxUint64, time.Unix(0, 0)},
		{0x80, 0, 7, time.Unix(7, 0)},
		{0x80 | 1, 0, 3, time.Unix(1, 5e8)},
		{0x80 | 10, 0, 1536, time.Unix(1, 5e8)},
		{0x80 | 30, 0, 1<<30 | 1<<29 | 1, time.Unix(1, 500_000_000)},
		{0x80 | 63, 0, 3 << 62, time.Unix(1, 5e8)},
		{0x80 | 64, 0, 1 << 63, time.Unix(0, 5e8)},
		{0x80 | 100, 0, 1 << 63, time.Unix(0, 0)},
		{0x80 | 127, 0, math.MaxUint64, time.Unix(0, 0)},
		{9, -10, 20e9, time.Unix(10, 0)},
		{0, 1 << 40, 1, time.Unix(1<<40+1, 0)},
	} {
		ib := &InterfaceBlock{TSResol: tt.resol, TSOffset: tt.offset}
		got, err := ib.time(uint32(tt.units>>32), uint32(tt.units))
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("%d units at if_tsresol %#x, if_tsoffset %d: %v, %v; want %v", tt.units, tt.resol, tt.offset, got, err, tt.want)
		}
	}
	for _, ib := range []*InterfaceBlock{{TSResol: 0}, {TSResol: 9, TSOffset: math.MaxInt64}} {
		if _, err := ib.time(math.MaxUint32, math.MaxUint32); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("if_tsresol %d, if_tsoffset %d: %v", ib.TSResol, ib.TSOffset, err)
		}
	}
}

// malformed are streams the Reader must refuse, with what its error says.
func malformed() []struct {
	name, stream, want string
} {
	shb := blk(le, typeSHB, fields(le, byteOrderMagic, 1, math.MaxUint32, math.MaxUint32))
	idb := blk(le, typeIDB, fields(le, 1, 0))
	epb := func(opts ...[]byte) []byte { return blk(le, typeEPB, fields(le, 0, 0, 0, 0, 0), bytes.Join(opts, nil)) }
	good := string(shb) + string(idb) // 28 and 20 bytes: the next block is at 48
	epbOK := string(epb())
	return []struct{ name, stream, want string }{
		{"empty", "", "pcapng: empty stream"},
		{"pcap", "\xd4\xc3\xb2\xa1\x02\x00\x04\x00", "pcapng: block of type 0xa1b2c3d4 at offset 0: not a pcapng stream, which starts with a section header block (type 0xa0d0d0a)"},
		{"magic", string(blk(le, typeSHB, fields(le, 0x01020304, 1, 0, 0))), "pcapng: section header block at offset 0: byte-order magic 04 03 02 01 is neither 1a2b3c4d nor 4d3c2b1a"},
		{"short section header", "\n\r\r\n\x10\x00\x00\x00\x4d\x3c", "pcapng: section header block at offset 0: truncated before its byte-order magic"},
		{"version", string(blk(le, typeSHB, fields(le, byteOrderMagic, 2, 0, 0))), "pcapng: section header block at offset 0: version 2.0, only 1.x is read"},
		{"section body", string(blk(le, typeSHB, fields(le, byteOrderMagic, 1))), "pcapng: section header block at offset 0: 4 bytes of body, want at least 12"},
		{"second section", good + string(blk(le, typeSHB, fields(le, byteOrderMagic, 3, 0, 0))), "pcapng: section header block at offset 48: version 3.0"},
		{"header", good + "\x06\x00\x00", "pcapng: block at offset 48: truncated: 3 of its 8 header bytes"},
		{"length", good + epbOK[:4] + "\x21\x00\x00\x00" + epbOK[8:], "pcapng: enhanced packet block at offset 48: block length 33 is not a multiple of 4 between 12 and 16777216"},
		{"short length", good + "\x06\x00\x00\x00\x08\x00\x00\x00", "pcapng: enhanced packet block at offset 48: block length 8 is not"},
		{"huge", good + "\x06\x00\x00\x00\xfc\xff\xff\xff", "block length 4294967292 is not"},
		{"truncated", good + epbOK[:30], "pcapng: enhanced packet block at offset 48: truncated: 30 of its 32 bytes"},
		{"trailer", good + epbOK[:28] + "\x24\x00\x00\x00", "pcapng: enhanced packet block at offset 48: block length 36 at its end differs from 32 at its start"},
		{"unknown block", good + string(blk(le, 0x99, []byte{1, 2, 3, 4}))[:10], "pcapng: block of type 0x99 at offset 48: truncated: 10 of its 16 bytes"},
		{"idb body", string(shb) + string(blk(le, typeIDB, fields(le, 1))), "pcapng: interface description block at offset 28: 4 bytes of body, want at least 8"},
		{"tsresol", string(shb) + string(blk(le, typeIDB, fields(le, 1, 0), opt(le, ifTSResol, 9, 9))), "pcapng: interface description block at offset 28: option 9: 2 bytes, want 1"},
		{"tsoffset", string(shb) + string(blk(le, typeIDB, fields(le, 1, 0), opt(le, ifTSOffset, 1))), "option 14: 1 bytes, want 8"},
		{"no interface", string(shb) + epbOK, "pcapng: enhanced packet block at offset 28: interface 0 is not among the 0 the section describes"},
		{"epb body", good + string(blk(le, typeEPB, fields(le, 0, 0, 0, 0))), "pcapng: enhanced packet block at offset 48: 16 bytes of body, want at least 20"},
		{"caplen", good + string(blk(le, typeEPB, fields(le, 0, 0, 0, 5, 5), []byte{1, 2, 3, 4})), "pcapng: enhanced packet block at offset 48: captured length 5 exceeds the 4 bytes left in the block"},
		{"flags", good + string(epb(opt(le, epbFlags, 1, 0, 0))), "pcapng: enhanced packet block at offset 48: option 2: 3 bytes, want 4"},
		{"queue", good + string(epb(opt(le, epbQueue, 1))), "option 6: 1 bytes, want 4"},
		{"option length", good + string(epb([]byte{1, 0, 0xff, 0})), "pcapng: enhanced packet block at offset 48: option 1: length 255 exceeds the 0 bytes left"},
		{"empty verdict", good + string(epb(opt(le, epbVerdict))), "option 7: empty verdict"},
		{"xdp verdict", good + string(epb(opt(le, epbVerdict, 2, 1, 0, 0, 0))), "option 7: 5 bytes, want 9"},
		{"time", string(shb) + string(blk(le, typeIDB, fields(le, 1, 0), opt(le, ifTSResol, 0))) + string(blk(le, typeEPB, fields(le, 0, math.MaxUint32, 0, 0, 0))), "pcapng: enhanced packet block at offset 56: timestamp 18446744069414584320 with if_tsresol 0x0 and if_tsoffset 0 is out of range"},
		{"isb body", good + string(blk(le, typeISB, fields(le, 0, 0))), "pcapng: interface statistics block at offset 48: 8 bytes of body, want at least 12"},
		{"isb interface", good + string(blk(le, typeISB, fields(le, 1, 0, 0))), "pcapng: interface statistics block at offset 48: interface 1 is not among the 1 the section describes"},
		{"isb option", good + string(blk(le, typeISB, fields(le, 0, 0, 0), opt(le, isbStartTime, 1, 2, 3, 4))), "pcapng: interface statistics block at offset 48: option 2: 4 bytes, want 8"},
	}
}

func TestMalformed(t *testing.T) {
	for _, tt := range malformed() {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := read(strings.NewReader(tt.stream))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestErrorsStay checks that the Reader does not go on reading from the
// middle of a block after an error.
func TestErrorsStay(t *testing.T) {
	out := newSample().write(t)
	stream := bytes.Join(out[:2], nil)
	bad := bytes.Clone(out[2])
	le.PutUint32(bad[len(bad)-4:], 12) // the trailer
	stream = append(append(stream, bad...), bytes.Join(out[3:], nil)...)
	rd, err := NewReader(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	_, err1 := rd.Next()
	_, err2 := rd.Next()
	if err1 == nil || err2 != err1 {
		t.Errorf("errors %v, then %v", err1, err2)
	}
}

// FuzzReader feeds the Reader damaged streams: it must return errors
// that say so, never panic nor hold more than the stream has.
func FuzzReader(f *testing.F) {
	out := newSample().write(f)
	whole := bytes.Join(out, nil)
	f.Add(whole)
	for _, n := range []int{10, 30, len(whole) / 2, len(whole) - 3} {
		f.Add(whole[:n])
	}
	for _, tt := range malformed() {
		f.Add([]byte(tt.stream))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rd, err := NewReader(bytes.NewReader(b))
		for err == nil {
			var blk Block
			blk, err = rd.Next()
			if p, ok := blk.(*PacketBlock); ok && len(p.Data) > len(b) {
				t.Fatalf("%d bytes of data from a %d-byte stream", len(p.Data), len(b))
			}
		}
		if err != io.EOF && !strings.HasPrefix(err.Error(), "pcapng: ") {
			t.Errorf("error without the package's prefix: %v", err)
		}
	})
}
