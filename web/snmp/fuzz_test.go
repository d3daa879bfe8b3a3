package snmp

import (
	"testing"

	"github.com/gosnmp/gosnmp"
)

// seeds are well-formed requests of every kind the agent answers, for the
// fuzzer to mutate: SNMPv2c get and bulk, SNMPv3 discovery and an
// authenticated, encrypted get.
func seeds(t testing.TB, a *Agent) [][]byte {
	get := []gosnmp.SnmpPDU{{Name: ".1.3.6.1.2.1.1.5.0", Type: gosnmp.Null}}
	var out [][]byte
	add := func(p *gosnmp.SnmpPacket) {
		b, err := p.MarshalMsg()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	add(&gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: testCommunity, PDUType: gosnmp.GetRequest, RequestID: 1, Variables: get})
	add(&gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: testCommunity, PDUType: gosnmp.GetBulkRequest, RequestID: 2,
		NonRepeaters: 1, MaxRepetitions: 5, Variables: append(get, gosnmp.SnmpPDU{Name: ".1.3.6.1.4", Type: gosnmp.Null})})
	add(&gosnmp.SnmpPacket{Version: gosnmp.Version3, MsgFlags: gosnmp.Reportable | gosnmp.NoAuthNoPriv, SecurityModel: gosnmp.UserSecurityModel,
		SecurityParameters: &gosnmp.UsmSecurityParameters{}, PDUType: gosnmp.GetRequest, MsgID: 3, RequestID: 3, MsgMaxSize: 65507})
	sp, err := User{Name: testUser, Auth: gosnmp.SHA256, AuthKey: testAuthKey, Priv: gosnmp.AES, PrivKey: testPrivKey}.params(a.engineID)
	if err != nil {
		t.Fatal(err)
	}
	sp.AuthoritativeEngineBoots, sp.AuthoritativeEngineTime, sp.PrivacyParameters = a.boots, a.engineTime(), []byte{1, 2, 3, 4, 5, 6, 7, 8}
	add(&gosnmp.SnmpPacket{Version: gosnmp.Version3, MsgFlags: gosnmp.Reportable | gosnmp.AuthPriv, SecurityModel: gosnmp.UserSecurityModel,
		SecurityParameters: sp, ContextEngineID: string(a.engineID), PDUType: gosnmp.GetRequest, MsgID: 4, RequestID: 4, MsgMaxSize: 65507, Variables: get})
	return out
}

// TestSeedsAnswered makes sure the fuzzer starts from requests the agent
// answers, so that its mutations reach the decoding of every kind.
func TestSeedsAnswered(t *testing.T) {
	a := newAgent(t)
	for i, s := range seeds(t, a) {
		if a.Handle(s) == nil {
			t.Errorf("seed %d not answered", i)
		}
	}
}

// FuzzHandle feeds the agent mutated requests: it must never panic (the
// fuzzer calls handle, without Handle's recover), and whatever it answers
// must fit a UDP datagram.
func FuzzHandle(f *testing.F) {
	a := newAgent(f)
	for _, s := range seeds(f, a) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		resp := a.handle(msg)
		if resp == nil {
			return
		}
		if len(resp) > 65507 {
			t.Fatalf("answer of %d bytes", len(resp))
		}
	})
}
