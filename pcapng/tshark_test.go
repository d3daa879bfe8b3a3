package pcapng

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/tsharktest"
)

// tsharkCapture is what the appliance streams: two ports, frames of the
// kinds a bump in the wire carries, each with its direction, its XDP
// verdict and why.
func tsharkCapture() sample {
	w := frames.WireFrames(0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms)*time.Millisecond + time.Duration(ms)) }
	pkt := func(iface uint32, ms int, data []byte, orig int, dir Direction, xdp int, comments ...string) Block {
		p := Packet{Interface: iface, Time: at(ms), Data: data, OrigLen: orig, Direction: dir, Comments: comments}
		if xdp >= 0 {
			p.Verdicts = []Verdict{{Type: VerdictXDP, Value: uint64(xdp)}}
		}
		if dir == Inbound {
			p.Queue = new(uint32(ms))
		}
		return &PacketBlock{p}
	}
	return sample{
		section: SectionOptions{Hardware: "ncpos appliance", OS: "ncpos", Application: "ncpos capture", Comment: "captured at the XDP hook"},
		blocks: []Block{
			&InterfaceBlock{ID: 0, Interface: Interface{Name: "LAN1", Description: "data port 1", SnapLen: 9216}},
			&InterfaceBlock{ID: 1, Interface: Interface{Name: "LAN2", Description: "data port 2", SnapLen: 256}},
			pkt(0, 0, w["arp"], 0, Inbound, XDPRedirect, "forwarded to LAN2"),
			pkt(1, 1, w["arp"], 0, Outbound, -1),
			pkt(1, 2, w["vlan"], 0, Inbound, XDPDrop, "dropped: no peer"),
			pkt(0, 3, w["qinq_1522"], 0, Inbound, XDPRedirect, "forwarded to LAN2", "QinQ, S-VLAN 100, C-VLAN 200"),
			pkt(1, 4, w["qinq_1522"][:256], 1522, Outbound, XDPTX, "truncated to LAN2's snaplen"),
			pkt(0, 5, w["lldp"], 0, DirectionUnknown, XDPPass, "passed to the stack, with commas, too"),
			&StatsBlock{Stats{Interface: 0, Time: at(6), Start: t0, End: at(6), Received: new(uint64(4)), Dropped: new(uint64(0)),
				Accepted: new(uint64(4)), OSDropped: new(uint64(1)), Delivered: new(uint64(3)), Comments: []string{"capture stopped by the operator"}}},
			&StatsBlock{Stats{Interface: 1, Time: at(6), Received: new(uint64(2))}},
		},
	}
}

// TestTshark writes a capture and has tshark read every field of every
// packet back, and the interface statistics, and checks that tshark
// finds nothing wrong with any block.
func TestTshark(t *testing.T) {
	s := tsharkCapture()
	file := filepath.Join(t.TempDir(), "capture.pcapng")
	if err := os.WriteFile(file, bytes.Join(s.write(t), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	var packets []Packet
	for _, b := range s.blocks {
		if p, ok := b.(*PacketBlock); ok {
			packets = append(packets, p.Packet)
		}
	}

	// Each packet's fields, one line each. Several comments are joined
	// with the aggregator, which no comment here contains.
	lines := tsharktest.Fields(t, file, "frame.interface_name", "frame.packet_flags_direction", "frame.comment",
		"frame.len", "frame.cap_len", "frame.verdict.ebpf_xdp", "frame.time_epoch", "frame.interface_queue")
	if len(lines) != len(packets) {
		t.Fatalf("tshark shows %d packets, want %d: %q", len(lines), len(packets), lines)
	}
	names := []string{"LAN1", "LAN2"}
	for i, p := range packets {
		dir := ""
		if p.Direction != DirectionUnknown {
			dir = fmt.Sprintf("0x%08x", p.Direction)
		}
		xdp := ""
		if len(p.Verdicts) > 0 {
			xdp = strconv.FormatUint(p.Verdicts[0].Value, 10)
		}
		want := []string{names[p.Interface], dir, strings.Join(p.Comments, "|"),
			strconv.Itoa(max(p.OrigLen, len(p.Data))), strconv.Itoa(len(p.Data)), xdp,
			fmt.Sprintf("%d.%09d", p.Time.Unix(), p.Time.Nanosecond()), ""}
		if p.Queue != nil {
			want[7] = strconv.Itoa(int(*p.Queue))
		}
		if got := lines[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("packet %d: tshark shows\n%q, want\n%q", i+1, got, want)
		}
	}

	// Each frame's bytes, from the JSON export's raw hex of the frame.
	raw := tsharktest.Frames(t, file)
	if len(raw) != len(packets) {
		t.Fatalf("tshark's JSON has %d packets, want %d", len(raw), len(packets))
	}
	for i, p := range packets {
		if !bytes.Equal(raw[i], p.Data) {
			t.Errorf("packet %d: tshark reads the bytes %x, want %x", i+1, raw[i], p.Data)
		}
	}

	// The blocks as tshark's dissector of pcapng files sees them: it
	// reports every inconsistency (lengths, padding, options) as expert
	// information, and is the only part of tshark 4.0 that shows an
	// Interface Statistics Block's comment and counters.
	var pdml struct {
		Fields []pdmlField `xml:"packet>proto>field"`
	}
	if err := xml.Unmarshal(tsharktest.Run(t, file, "-X", "read_format:MIME Files Format", "-T", "pdml"), &pdml); err != nil {
		t.Fatal(err)
	}
	var isbs []map[string]string
	for _, f := range pdml.Fields {
		if f.Name == "_ws.expert" || f.find("_ws.expert") != nil {
			t.Errorf("tshark finds a problem in %q", f.ShowName)
		}
		if f.Name == "pcapng.block" && f.find("pcapng.block.type").Show == fmt.Sprintf("0x%08x", typeISB) {
			isbs = append(isbs, f.values())
		}
	}
	want := []map[string]string{{
		"pcapng.interface_id":                                     "0",
		"pcapng.options.option.data.comment":                      "capture stopped by the operator",
		"pcapng.options.option.data.interface.received":           "4",
		"pcapng.options.option.data.interface.dropped":            "0",
		"pcapng.options.option.data.interface.accepted_by_filter": "4",
		"pcapng.options.option.data.interface.dropped_by_os":      "1",
		"pcapng.options.option.data.interface.delivered_to_user":  "3",
		"pcapng.options.option.data.start_time":                   "", // tshark 4.0 shows neither time
		"pcapng.options.option.data.end_time":                     "",
		"pcapng.timestamp":                                        "May  1, 2026 12:00:00.129456795 UTC",
	}, {
		"pcapng.interface_id":                           "1",
		"pcapng.options.option.data.interface.received": "2",
		"pcapng.timestamp":                              "May  1, 2026 12:00:00.129456795 UTC",
	}}
	for i := range want {
		if i >= len(isbs) {
			t.Fatalf("tshark shows %d interface statistics blocks, want %d", len(isbs), len(want))
		}
		for k, v := range want[i] {
			if got, ok := isbs[i][k]; !ok || got != v {
				t.Errorf("interface statistics block %d: %s is %q, want %q", i, k, got, v)
			}
		}
	}
}

// pdmlField is a field of tshark's PDML output, with the fields under it.
type pdmlField struct {
	Name     string      `xml:"name,attr"`
	Show     string      `xml:"show,attr"`
	ShowName string      `xml:"showname,attr"`
	Fields   []pdmlField `xml:"field"`
}

// find is the first field named name under f, or nil.
func (f *pdmlField) find(name string) *pdmlField {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
		if g := f.Fields[i].find(name); g != nil {
			return g
		}
	}
	return nil
}

// values are the values of every field under f, by name.
func (f *pdmlField) values() map[string]string {
	m := map[string]string{}
	for _, g := range f.Fields {
		m[g.Name] = g.Show
		for k, v := range g.values() {
			m[k] = v
		}
	}
	return m
}

// TestTsharkWritten reads what tshark writes when it copies the capture:
// the Reader reads Wireshark's own pcapng as well as ours. Without the
// verdicts: Wireshark 4.0 writes epb_verdict under epb_queue's code 6,
// which neither it nor the Reader can read back.
func TestTsharkWritten(t *testing.T) {
	s := tsharkCapture()
	for _, b := range s.blocks {
		if p, ok := b.(*PacketBlock); ok {
			p.Verdicts = nil
		}
	}
	dir := t.TempDir()
	ours, theirs := filepath.Join(dir, "ours.pcapng"), filepath.Join(dir, "theirs.pcapng")
	if err := os.WriteFile(ours, bytes.Join(s.write(t), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	tsharktest.Run(t, ours, "-w", theirs, "-F", "pcapng")
	f, err := os.Open(theirs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, blocks, err := read(f)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []Packet
	for _, b := range blocks {
		if p, ok := b.(*PacketBlock); ok {
			got = append(got, p.Packet)
		}
	}
	for _, b := range s.blocks {
		if p, ok := b.(*PacketBlock); ok {
			p.OrigLen = max(p.OrigLen, len(p.Data))
			want = append(want, p.Packet)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("packets as tshark wrote them:\n%+v\nwant\n%+v", got, want)
	}
}
