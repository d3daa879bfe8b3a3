package snmp

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/ncpos/ncpos/internal/snmptest"
)

// TestTrapsReachSnmptrapd sends a notification over SNMPv2c and SNMPv3
// authPriv to Debian's snmptrapd.
func TestTrapsReachSnmptrapd(t *testing.T) {
	a, _ := startAgent(t)
	td := snmptest.StartTrapd(t, testCommunity, &snmptest.V3User{EngineID: hex.EncodeToString(a.EngineID()),
		Name: testUser, Auth: "SHA-256", AuthKey: testAuthKey, Priv: "AES", PrivKey: testPrivKey})
	to := fmt.Sprintf("127.0.0.1:%d", td.Port)
	n, err := NewNotifier(a, []Receiver{
		{Addr: to, Community: testCommunity},
		{Addr: to, User: &User{Name: testUser, Auth: gosnmp.SHA256, AuthKey: testAuthKey, Priv: gosnmp.AES, PrivKey: testPrivKey}},
		{Addr: to, Community: "wrong"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.Run(ctx)
	n.Notify(mustOID("1.3.6.1.4.1.32473.0.1"), []Var{{OID: mustOID("1.3.6.1.4.1.32473.1.2.1.2.1"), Type: gosnmp.OctetString, Value: "seg1"}})
	if !td.WaitFor("seg1", 10*time.Second) {
		t.Fatal("no trap arrived")
	}
	time.Sleep(time.Second)
	got := 0
	for _, l := range td.Lines() {
		if strings.Contains(l, ".1.3.6.1.4.1.32473.0.1") {
			got++
		}
	}
	// The v2c and the v3 trap; the wrong community is not logged.
	if got != 2 {
		t.Errorf("snmptrapd logged %d traps, want 2:\n%v", got, td.Lines())
	}
	if n.Sent.Load() != 3 {
		t.Errorf("%d sent", n.Sent.Load())
	}
}
