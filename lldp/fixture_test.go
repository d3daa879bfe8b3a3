package lldp

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/internal/fixtures"
	"github.com/ncpos/ncpos/internal/tsharktest"
	"github.com/ncpos/ncpos/pcapng"
)

// The fixture is what Debian's lldpd sends (scripts/testdata.sh made it:
// a frame and the shutdown LLDPDU it sends as it stops, captured by
// dumpcap), and what Wireshark's tshark reads in each frame.
const (
	lldpdCapture = "testdata/lldpd.pcapng"
	lldpdTshark  = "testdata/lldpd.tshark"
	// tsharkFields are the fields of lldpd.tshark, in its order.
	tsharkFields = "lldp.chassis.subtype lldp.chassis.id.mac lldp.port.subtype lldp.port.id lldp.time_to_live lldp.port.desc lldp.tlv.system.name lldp.tlv.system.desc lldp.mgn.addr.ip4 lldp.mgn.addr.ip6"
)

// TestLldpdFixture decodes the frames lldpd sent as Wireshark reads them:
// identities and their subtypes, the TTL (0 as lldpd stops), the port's
// description, the system's name and description, and the first
// management address.
func TestLldpdFixture(t *testing.T) {
	want := fixtures.Lines(t, lldpdTshark)
	f, err := os.Open(lldpdCapture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapng.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p, ok := b.(*pcapng.PacketBlock)
		if !ok {
			continue
		}
		if i >= len(want) {
			t.Fatalf("frame %d: tshark read %d frames", i+1, len(want))
		}
		n, err := Decode(p.Data)
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		w := want[i]
		got := []string{strconv.Itoa(n.ChassisIDSubtype), n.ChassisID, strconv.Itoa(n.PortIDSubtype), n.PortID, strconv.Itoa(n.TTL),
			n.PortDescription, n.SystemName, n.SystemDescription}
		for k := range got {
			if got[k] != w[k] {
				t.Errorf("frame %d, %s: %q, tshark reads %q", i+1, strings.Fields(tsharkFields)[k], got[k], w[k])
			}
		}
		if first := w[8]; n.ManagementAddress != first {
			t.Errorf("frame %d: management address %q, tshark reads %q first", i+1, n.ManagementAddress, first)
		}
		i++
	}
	if i != len(want) {
		t.Errorf("%d frames, tshark read %d", i, len(want))
	}
}

// TestLldpdFixtureIsTsharks: lldpd.tshark is what tshark reads in the
// capture now.
func TestLldpdFixtureIsTsharks(t *testing.T) {
	rows := tsharktest.Fields(t, lldpdCapture, strings.Fields(tsharkFields)...)
	want := fixtures.Lines(t, lldpdTshark)
	if len(rows) != len(want) {
		t.Fatalf("tshark reads %d frames, the fixture has %d", len(rows), len(want))
	}
	for i := range rows {
		if strings.Join(rows[i], "\t") != strings.Join(want[i], "\t") {
			t.Errorf("frame %d: tshark reads %q, the fixture says %q", i+1, rows[i], want[i])
		}
	}
}
