package pcapng

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)

// writes records each Write call on its own.
type writes [][]byte

func (w *writes) Write(b []byte) (int, error) {
	*w = append(*w, bytes.Clone(b))
	return len(b), nil
}

// sample is a capture using every field the Writer writes, as written and
// as it reads back.
type sample struct {
	section SectionOptions
	blocks  []Block
}

func newSample() sample {
	return sample{
		section: SectionOptions{Hardware: "ncpos appliance", OS: "ncpos 2026.05", Application: "ncpos capture", Comment: "capture on LAN1 and LAN2\r\nby the operator"},
		blocks: []Block{
			&InterfaceBlock{Interface: Interface{Name: "LAN1", Description: "first data port", SnapLen: 0}},
			&InterfaceBlock{ID: 1, Interface: Interface{Name: "LAN2", SnapLen: 64}},
			&PacketBlock{Packet{Interface: 0, Time: t0, Data: []byte{1, 2, 3, 4, 5}, Direction: Inbound,
				Verdicts: []Verdict{{Type: VerdictXDP, Value: XDPRedirect}, {Type: VerdictTC, Value: 1 << 40}, {Type: VerdictHardware, Data: []byte{0xde, 0xad}}, {Type: 9, Data: []byte{}}},
				Queue:    new(uint32(7)), Comments: []string{"forwarded to LAN2", "", "zweiter Kommentar: ä"}}},
			&PacketBlock{Packet{Interface: 1, Time: t0.Add(time.Nanosecond), Data: bytes.Repeat([]byte{0xaa}, 64), OrigLen: 1522, Direction: Outbound, Queue: new(uint32(0))}},
			&PacketBlock{Packet{Interface: 1, Time: time.Unix(0, 0).UTC(), Data: []byte{}}},
			&PacketBlock{Packet{Interface: 0, Time: t0, Data: []byte{9, 8, 7}, OrigLen: 3, Verdicts: []Verdict{{Type: VerdictXDP, Value: XDPDrop}}, Comments: []string{"dropped: no peer"}}},
			&StatsBlock{Stats{Interface: 0, Time: t0.Add(time.Second), Start: t0.Add(-time.Hour), End: t0.Add(time.Second),
				Received: new(uint64(10)), Dropped: new(uint64(1)), Accepted: new(uint64(9)), OSDropped: new(uint64(0)), Delivered: new(uint64(1 << 60)),
				Comments: []string{"capture stopped"}}},
			&StatsBlock{Stats{Interface: 1, Time: t0}},
		},
	}
}

// write writes s, one Write call a block.
func (s sample) write(t testing.TB) writes {
	t.Helper()
	var out writes
	w, err := NewWriter(&out, s.section)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range s.blocks {
		switch b := b.(type) {
		case *InterfaceBlock:
			id, err := w.AddInterface(b.Interface)
			if err != nil || id != b.ID {
				t.Fatalf("AddInterface(%+v) = %d, %v; want %d", b.Interface, id, err, b.ID)
			}
		case *PacketBlock:
			err = w.WritePacket(b.Packet)
		case *StatsBlock:
			err = w.WriteStats(b.Stats)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// read reads a whole stream.
func read(r io.Reader) (SectionOptions, []Block, error) {
	rd, err := NewReader(r)
	if err != nil {
		return SectionOptions{}, nil, err
	}
	var blocks []Block
	for {
		b, err := rd.Next()
		if err == io.EOF {
			return rd.Section(), blocks, nil
		}
		if err != nil {
			return rd.Section(), blocks, err
		}
		blocks = append(blocks, b)
	}
}

func TestRoundTrip(t *testing.T) {
	s := newSample()
	out := s.write(t)
	if len(out) != 1+len(s.blocks) {
		t.Errorf("%d Write calls for %d blocks", len(out), 1+len(s.blocks))
	}
	for i, b := range out {
		n := len(b)
		if n%4 != 0 || n < 12 || le.Uint32(b[4:]) != uint32(n) || le.Uint32(b[n-4:]) != uint32(n) {
			t.Errorf("Write %d is not one whole block: %d bytes, lengths %d and %d", i, n, le.Uint32(b[4:]), le.Uint32(b[n-4:]))
		}
	}
	section, blocks, err := read(bytes.NewReader(bytes.Join(out, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if section != s.section {
		t.Errorf("section %+v, want %+v", section, s.section)
	}
	// What reads back: the interfaces' fixed parts, original lengths.
	for _, b := range s.blocks {
		switch b := b.(type) {
		case *InterfaceBlock:
			b.LinkType, b.TSResol = LinkTypeEthernet, 9
		case *PacketBlock:
			b.OrigLen = max(b.OrigLen, len(b.Data))
		}
	}
	if len(blocks) != len(s.blocks) {
		t.Fatalf("read %d blocks, want %d", len(blocks), len(s.blocks))
	}
	for i := range blocks {
		if !reflect.DeepEqual(blocks[i], s.blocks[i]) {
			t.Errorf("block %d:\n got %+v\nwant %+v", i, blocks[i], s.blocks[i])
		}
	}
}

// TestPacketLayout checks an Enhanced Packet Block byte by byte against
// the draft's Figure 11: padding of the data and of each option to 32
// bits, the options' order as written, the end of options, and the total
// length at both ends.
func TestPacketLayout(t *testing.T) {
	var out writes
	w, err := NewWriter(&out, SectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(Interface{}); err != nil {
		t.Fatal(err)
	}
	err = w.WritePacket(Packet{Time: time.Unix(0, 0x0102030405060708), Data: []byte("abcde"), OrigLen: 6, Direction: Inbound,
		Verdicts: []Verdict{{Type: VerdictXDP, Value: XDPPass}}, Comments: []string{"hi"}})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"06000000", "4c000000", // type, total length 76
		"00000000",             // interface 0
		"04030201", "08070605", // timestamp: upper, lower 32 bits
		"05000000", "06000000", // captured, original length
		"6162636465000000",                      // data, padded
		"01000200" + "68690000",                 // opt_comment "hi", padded
		"02000400" + "01000000",                 // epb_flags: inbound
		"07000900" + "020200000000000000000000", // epb_verdict: XDP, XDP_PASS, padded
		"00000000",                              // opt_endofopt
		"4c000000",
	}, "")
	if got := hex.EncodeToString(out[len(out)-1]); got != want {
		t.Errorf("block\n got %s\nwant %s", got, want)
	}
	want = "0a0d0d0a" + "1c000000" + "4d3c2b1a" + "01000000" + "ffffffffffffffff" + "1c000000"
	if got := hex.EncodeToString(out[0]); got != want {
		t.Errorf("section header without options\n got %s\nwant %s", got, want)
	}
}

func TestWriterErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		do   func(w *Writer) error
		want string
	}{
		{"unknown interface", func(w *Writer) error { return w.WritePacket(Packet{Interface: 2, Time: t0}) }, "interface 2: no such interface (2 added)"},
		{"snaplen", func(w *Writer) error { return w.WritePacket(Packet{Interface: 1, Time: t0, Data: make([]byte, 65)}) }, "65 captured bytes exceed the interface's snaplen of 64"},
		{"too large", func(w *Writer) error { return w.WritePacket(Packet{Time: t0, Data: make([]byte, maxPacket+1)}) }, "exceed the limit of 262144"},
		{"original length", func(w *Writer) error { return w.WritePacket(Packet{Time: t0, Data: make([]byte, 10), OrigLen: 9}) }, "original length 9 is not between the 10 captured bytes"},
		{"before 1970", func(w *Writer) error { return w.WritePacket(Packet{Time: time.Time{}}) }, "not between 1970 and 2262"},
		{"direction", func(w *Writer) error { return w.WritePacket(Packet{Time: t0, Direction: 3}) }, "direction 3 is neither"},
		{"comment", func(w *Writer) error { return w.WritePacket(Packet{Time: t0, Comments: []string{"\xff"}}) }, `comment "\xff": not valid UTF-8`},
		{"NUL", func(w *Writer) error { return w.WritePacket(Packet{Time: t0, Comments: []string{"a\x00b"}}) }, "without NUL bytes"},
		{"long comment", func(w *Writer) error {
			return w.WritePacket(Packet{Time: t0, Comments: []string{strings.Repeat("x", 65536)}})
		}, "option 1: 65536 bytes, at most 65535 fit"},
		{"hardware verdict", func(w *Writer) error {
			return w.WritePacket(Packet{Time: t0, Verdicts: []Verdict{{Data: make([]byte, 65535)}}})
		}, "option 7: 65536 bytes"},
		{"stats interface", func(w *Writer) error { return w.WriteStats(Stats{Interface: 5, Time: t0}) }, "statistics of interface 5: no such interface"},
		{"stats time", func(w *Writer) error { return w.WriteStats(Stats{Time: t0, End: time.Unix(-1, 0)}) }, "not between 1970"},
		{"interface name", func(w *Writer) error { _, err := w.AddInterface(Interface{Name: "\xc3"}); return err }, `interface "\xc3": interface name`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out writes
			w, err := NewWriter(&out, SectionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w.AddInterface(Interface{Name: "LAN1"})
			w.AddInterface(Interface{Name: "LAN2", SnapLen: 64})
			n := len(out)
			err = tt.do(w)
			if err == nil || !strings.HasPrefix(err.Error(), "pcapng: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
			if len(out) != n {
				t.Errorf("wrote %d blocks despite the error", len(out)-n)
			}
			if err := w.WritePacket(Packet{Time: t0}); err != nil {
				t.Errorf("the Writer is unusable after the error: %v", err)
			}
		})
	}
	if _, err := NewWriter(io.Discard, SectionOptions{OS: "\xff"}); err == nil || !strings.Contains(err.Error(), "pcapng: section header: OS") {
		t.Errorf("NewWriter with an invalid OS: %v", err)
	}
}

type failAfter struct{ n int }

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("connection reset")
	}
	f.n--
	return len(b), nil
}

// TestWriteFailure checks that a broken stream stays broken: the operator
// must not get blocks after a hole.
func TestWriteFailure(t *testing.T) {
	w, err := NewWriter(&failAfter{n: 2}, SectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(Interface{}); err != nil {
		t.Fatal(err)
	}
	err = w.WritePacket(Packet{Time: t0})
	if err == nil || err.Error() != "pcapng: writing enhanced packet block: connection reset" {
		t.Fatalf("error %v", err)
	}
	if err2 := w.WriteStats(Stats{Time: t0}); err2 != err {
		t.Errorf("after a failed Write: %v, want %v", err2, err)
	}
}
