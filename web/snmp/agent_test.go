package snmp

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/gosnmp/gosnmp"

	"github.com/ncpos/ncpos/internal/snmptest"
)

const (
	testCommunity = "noc-read-7"
	testUser      = "noc"
	testAuthKey   = "auth-key-for-noc"
	testPrivKey   = "priv-key-for-noc"
)

// testView is a small box: the system group and two ports' octets, with
// enough rows that a bulk walk needs more than one datagram.
func testView(t testing.TB) *View {
	vars := []Var{
		{OID: mustOID("1.3.6.1.2.1.1.1.0"), Type: gosnmp.OctetString, Value: "ncpos test"},
		{OID: mustOID("1.3.6.1.2.1.1.5.0"), Type: gosnmp.OctetString, Value: "box-1"},
	}
	for i := uint32(1); i <= 2; i++ {
		vars = append(vars,
			Var{OID: mustOID("1.3.6.1.2.1.31.1.1.1.1").Append(i), Type: gosnmp.OctetString, Value: fmt.Sprintf("LAN%d", i)},
			Var{OID: mustOID("1.3.6.1.2.1.31.1.1.1.6").Append(i), Type: gosnmp.Counter64, Value: uint64(1)<<40 + uint64(i)})
	}
	for i := uint32(1); i <= 300; i++ {
		vars = append(vars, Var{OID: mustOID("1.3.6.1.4.1.32473.9.1").Append(i), Type: gosnmp.Integer, Value: int(i)})
	}
	v, err := NewView(vars)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func newAgent(t testing.TB) *Agent {
	t.Helper()
	id, err := NewEngineID(32473)
	if err != nil {
		t.Fatal(err)
	}
	view := testView(t)
	a, err := NewAgent(Config{Community: testCommunity, EngineID: id, Boots: 3, View: func() *View { return view },
		Users: []User{{Name: testUser, Auth: gosnmp.SHA256, AuthKey: testAuthKey, Priv: gosnmp.AES, PrivKey: testPrivKey}}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func startAgent(t *testing.T) (*Agent, string) {
	t.Helper()
	a := newAgent(t)
	return a, serve(t, a)
}

// serve runs a on a loopback port until the test ends, and returns its
// address.
func serve(t *testing.T, a *Agent) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, pc) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "udp:" + pc.LocalAddr().String()
}

func v3Args(auth, priv string) []string {
	return []string{"-v3", "-l", "authPriv", "-u", testUser, "-a", "SHA-256", "-A", auth, "-x", "AES", "-X", priv}
}

// TestNetSNMPTools asks the agent what a NOC would, with Debian's net-snmp
// tools: get, walk and bulk walk over SNMPv2c and SNMPv3 authPriv.
func TestNetSNMPTools(t *testing.T) {
	a, addr := startAgent(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"v2c", []string{"-v2c", "-c", testCommunity}},
		{"v3", v3Args(testAuthKey, testPrivKey)},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := snmptest.Tool(t, "snmpget", append(c.args, addr, "1.3.6.1.2.1.1.5.0", "1.3.6.1.2.1.31.1.1.1.6.2")...)
			if err != nil {
				t.Fatal(err)
			}
			got := snmptest.Walk(out)
			if got[".1.3.6.1.2.1.1.5.0"] != `STRING: "box-1"` || got[".1.3.6.1.2.1.31.1.1.1.6.2"] != "Counter64: 1099511627778" {
				t.Errorf("snmpget printed:\n%s", out)
			}
			for _, tool := range []string{"snmpwalk", "snmpbulkwalk"} {
				out, err := snmptest.Tool(t, tool, append(c.args, addr, "1.3.6.1")...)
				if err != nil {
					t.Fatal(err)
				}
				w := snmptest.Walk(out)
				if len(w) < 306 || w[".1.3.6.1.4.1.32473.9.1.300"] != "INTEGER: 300" {
					t.Errorf("%s: %d objects, want the view's 306 and the agent's own:\n%s", tool, len(w), out)
				}
				if _, ok := w[".1.3.6.1.6.3.15.1.1.5.0"]; !ok {
					t.Errorf("%s: no usmStatsWrongDigests", tool)
				}
			}
			out, err = snmptest.Tool(t, "snmpget", append(c.args, addr, "1.3.6.1.2.1.1.5.7", "1.3.6.1.2.1.99.1.0")...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "No Such Instance") || !strings.Contains(out, "No Such Object") {
				t.Errorf("missing objects:\n%s", out)
			}
			out, err = snmptest.Tool(t, "snmpset", append(c.args, addr, "1.3.6.1.2.1.1.5.0", "s", "evil")...)
			if err == nil || !strings.Contains(out, "notWritable") {
				t.Errorf("snmpset: %v\n%s", err, out)
			}
		})
	}
	if n := a.Stats.Sets.Load(); n != 2 {
		t.Errorf("%d sets counted, want 2", n)
	}
}

// TestRefused checks that wrong credentials get no answer at all, and are
// counted.
func TestRefused(t *testing.T) {
	a, addr := startAgent(t)
	cases := []struct {
		name    string
		args    []string
		counter func() uint64
	}{
		{"wrong community", []string{"-v2c", "-c", "public"}, a.Stats.BadCommunityNames.Load},
		{"SNMPv1", []string{"-v1", "-c", testCommunity}, a.Stats.BadVersions.Load},
		{"wrong auth key", v3Args("not-the-auth-key", testPrivKey), a.Stats.WrongDigests.Load},
		{"wrong priv key", v3Args(testAuthKey, "not-the-priv-key"), a.Stats.DecryptionErrors.Load},
		{"unknown user", []string{"-v3", "-l", "authPriv", "-u", "mallory", "-a", "SHA-256", "-A", testAuthKey, "-x", "AES", "-X", testPrivKey}, a.Stats.UnknownUserNames.Load},
		{"authNoPriv", []string{"-v3", "-l", "authNoPriv", "-u", testUser, "-a", "SHA-256", "-A", testAuthKey}, a.Stats.UnsupportedSecLevels.Load},
	}
	for _, c := range cases {
		before := c.counter()
		out, err := snmptest.Tool(t, "snmpget", append(c.args, addr, "1.3.6.1.2.1.1.5.0")...)
		if err == nil || strings.Contains(out, "box-1") {
			t.Errorf("%s: answered: %s", c.name, out)
		}
		if c.counter() == before {
			t.Errorf("%s: not counted", c.name)
		}
	}
}

// TestBulkFitsDatagram asks for far more than fits one answer.
func TestBulkFitsDatagram(t *testing.T) {
	a, _ := startAgent(t)
	req := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: testCommunity, PDUType: gosnmp.GetBulkRequest,
		RequestID: 7, MaxRepetitions: 10000, Variables: []gosnmp.SnmpPDU{{Name: ".1.3.6.1", Type: gosnmp.Null}}}
	b, err := req.MarshalMsg()
	if err != nil {
		t.Fatal(err)
	}
	resp := a.Handle(b)
	if resp == nil || len(resp) > maxResponse {
		t.Fatalf("answer of %d bytes, want 1 to %d", len(resp), maxResponse)
	}
	p, err := (&gosnmp.GoSNMP{Version: gosnmp.Version2c}).SnmpDecodePacket(resp)
	if err != nil {
		t.Fatal(err)
	}
	if p.Error != gosnmp.NoError || len(p.Variables) < 10 || p.RequestID != 7 {
		t.Errorf("error %v, %d variables, request %d", p.Error, len(p.Variables), p.RequestID)
	}
}
