package snmp

import (
	"testing"

	"github.com/gosnmp/gosnmp"
)

func TestViewOrderAndNext(t *testing.T) {
	v, err := NewView([]Var{
		{OID: mustOID("1.3.6.1.2.1.2.2.1.10.2"), Type: gosnmp.Counter32, Value: uint32(2)},
		{OID: mustOID("1.3.6.1.2.1.1.5.0"), Type: gosnmp.OctetString, Value: "box"},
		{OID: mustOID("1.3.6.1.2.1.2.2.1.10.10"), Type: gosnmp.Counter32, Value: uint32(10)},
		{OID: mustOID("1.3.6.1.2.1.1.1.0"), Type: gosnmp.OctetString, Value: "ncpos"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var walk []string
	for o := mustOID("1.3"); ; {
		x, ok := v.Next(o)
		if !ok {
			break
		}
		walk = append(walk, x.OID.String())
		o = x.OID
	}
	want := []string{".1.3.6.1.2.1.1.1.0", ".1.3.6.1.2.1.1.5.0", ".1.3.6.1.2.1.2.2.1.10.2", ".1.3.6.1.2.1.2.2.1.10.10"}
	if len(walk) != len(want) {
		t.Fatalf("walk %v, want %v", walk, want)
	}
	for i := range want {
		if walk[i] != want[i] {
			t.Fatalf("walk %v, want %v (numeric, not textual, order)", walk, want)
		}
	}
	if _, ok := v.Get(mustOID("1.3.6.1.2.1.1.5")); ok {
		t.Error("Get found an object without its instance")
	}
	if x, ok := v.Next(mustOID("1.3.6.1.2.1.1.5")); !ok || x.OID.String() != ".1.3.6.1.2.1.1.5.0" {
		t.Errorf("Next of the object: %v %v", x.OID, ok)
	}
	if _, err := NewView([]Var{{OID: mustOID("1.3.6")}, {OID: mustOID("1.3.6")}}); err == nil {
		t.Error("a duplicate instance was accepted")
	}
	for _, bad := range []string{"", "1.x", "1.3.99999999999"} {
		if _, err := parseOID(bad); err == nil {
			t.Errorf("ParseOID(%q) accepted", bad)
		}
	}
}
