package pcapng

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/internal/tsharktest"
)

// The fixture is a capture Wireshark's dumpcap wrote on a veth
// (scripts/testdata.sh made it), and what tshark reads of each frame:
// its time, its length on the wire and as captured, its interface.
const (
	dumpcapCapture = "testdata/dumpcap.pcapng"
	dumpcapTshark  = "testdata/dumpcap.tshark"
	dumpcapFields  = "frame.time_epoch frame.len frame.cap_len frame.interface_name"
)

func dumpcapLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dumpcapTshark)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// TestDumpcapFixture reads a file dumpcap wrote (its section's options,
// an interface with its name and nanosecond resolution, enhanced packet
// blocks, the statistics block it ends with) and gets each frame as
// tshark does, to the nanosecond.
func TestDumpcapFixture(t *testing.T) {
	f, err := os.Open(dumpcapCapture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Section(); !strings.Contains(s.Application, "Dumpcap") || s.OS == "" {
		t.Errorf("section options %+v, want dumpcap's", s)
	}
	ifaces := map[uint32]*InterfaceBlock{}
	var got []string
	stats := 0
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch b := b.(type) {
		case *InterfaceBlock:
			ifaces[b.ID] = b
		case *PacketBlock:
			ib := ifaces[b.Interface]
			if ib == nil {
				t.Fatalf("a packet of interface %d, not described", b.Interface)
			}
			got = append(got, fmt.Sprintf("%d.%09d\t%d\t%d\t%s", b.Time.Unix(), b.Time.Nanosecond(), b.OrigLen, len(b.Data), ib.Name))
		case *StatsBlock:
			stats++
		}
	}
	want := dumpcapLines(t)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames read:\n%s\ntshark reads:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if stats == 0 {
		t.Error("no statistics block read: dumpcap ends its files with one")
	}
}

// TestDumpcapFixtureIsTsharks: dumpcap.tshark is what tshark reads now.
func TestDumpcapFixtureIsTsharks(t *testing.T) {
	rows := tsharktest.Fields(t, dumpcapCapture, strings.Fields(dumpcapFields)...)
	want := dumpcapLines(t)
	if len(rows) != len(want) {
		t.Fatalf("tshark reads %d frames, the fixture has %d", len(rows), len(want))
	}
	for i := range rows {
		if got := strings.Join(rows[i], "\t"); got != want[i] {
			t.Errorf("frame %d: tshark reads %q, the fixture says %q", i+1, got, want[i])
		}
	}
}
